//! The reference of `cargo xtask bench train-tiny`: a training loop written the way candle's own
//! examples write one — plain tensor ops for the model (masked softmax, log-softmax and gather
//! for the loss), autograd, and AdamW as candle-nn writes it — on the same model, corpus and
//! batch as the template. It shares no training code with model-tiny (only the loading of the
//! weights and the corpus), so the ratio measures our training path against plain candle.
//!
//! `candle_train_reference MODEL.bin TOK.bin CORPUS.txt STEPS MICRO_BATCH SEQ_LEN` prints one
//! JSON line: the tokens/s over the steps after the first.
#![allow(clippy::unwrap_used)] // A benchmark's helper: any failure is the run failing.

// candle's training path is native only here; `cargo test --target wasm32-unknown-unknown` still
// builds every example, so the wasm build is an empty program.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::main();
}

#[cfg(not(target_arch = "wasm32"))]
mod native {

    use candle_core::{D, DType, Device, Tensor, Var};
    use model_tiny::train::encode_corpus;
    use model_tiny::weights::tensor_specs;
    use model_tiny::{Tokenizer, load_weights};
    use std::time::Instant;

    fn rmsnorm(x: &Tensor, w: &Tensor) -> Tensor {
        let ms = x.sqr().unwrap().mean_keepdim(D::Minus1).unwrap();
        let inv = (ms + 1e-5).unwrap().sqrt().unwrap().recip().unwrap();
        x.broadcast_mul(&inv).unwrap().broadcast_mul(w).unwrap()
    }

    fn linear(x: &Tensor, w: &Tensor) -> Tensor {
        x.matmul(&w.t().unwrap()).unwrap()
    }

    fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Tensor {
        let (b, h, t, hs) = x.dims4().unwrap();
        let x = x.reshape((b, h, t, hs / 2, 2)).unwrap();
        let x0 = x.narrow(4, 0, 1).unwrap();
        let x1 = x.narrow(4, 1, 1).unwrap();
        let out0 = (x0.broadcast_mul(cos).unwrap() - x1.broadcast_mul(sin).unwrap()).unwrap();
        let out1 = (x0.broadcast_mul(sin).unwrap() + x1.broadcast_mul(cos).unwrap()).unwrap();
        Tensor::cat(&[out0, out1], 4)
            .unwrap()
            .reshape((b, h, t, hs))
            .unwrap()
    }

    struct Shape {
        dim: usize,
        layers: usize,
        heads: usize,
        kv_heads: usize,
        vocab: usize,
        shared: bool,
    }

    fn loss(p: &[Var], s: &Shape, x: &Tensor, y: &Tensor, dev: &Device) -> Tensor {
        let (b, t) = x.dims2().unwrap();
        let hs = s.dim / s.heads;
        let mut cos = Vec::new();
        let mut sin = Vec::new();
        for pos in 0..t {
            for i in (0..hs).step_by(2) {
                let v = pos as f32 / 10000f32.powf(i as f32 / hs as f32);
                cos.push(v.cos());
                sin.push(v.sin());
            }
        }
        let cos = Tensor::from_vec(cos, (t, hs / 2, 1), dev).unwrap();
        let sin = Tensor::from_vec(sin, (t, hs / 2, 1), dev).unwrap();
        let mask: Vec<f32> = (0..t * t)
            .map(|i| {
                if i % t > i / t {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let mask = Tensor::from_vec(mask, (t, t), dev).unwrap();
        let emb = p[0].as_tensor();
        let mut h = emb.index_select(&x.flatten_all().unwrap(), 0).unwrap();
        for l in 0..s.layers {
            let w = |i: usize| p[1 + 9 * l + i].as_tensor();
            let n = rmsnorm(&h, w(0));
            let heads = |wt: &Tensor, k: usize| {
                linear(&n, wt)
                    .reshape((b, t, k, hs))
                    .unwrap()
                    .transpose(1, 2)
                    .unwrap()
                    .contiguous()
                    .unwrap()
            };
            let q = rope(&heads(w(1), s.heads), &cos, &sin);
            let k = rope(&heads(w(2), s.kv_heads), &cos, &sin);
            let v = heads(w(3), s.kv_heads);
            let rep = |x: Tensor| {
                if s.heads == s.kv_heads {
                    return x;
                }
                x.unsqueeze(2)
                    .unwrap()
                    .broadcast_as((b, s.kv_heads, s.heads / s.kv_heads, t, hs))
                    .unwrap()
                    .contiguous()
                    .unwrap()
                    .reshape((b, s.heads, t, hs))
                    .unwrap()
            };
            let (k, v) = (rep(k), rep(v));
            let att = (q.matmul(&k.t().unwrap().contiguous().unwrap()).unwrap()
                * (1.0 / (hs as f64).sqrt()))
            .unwrap()
            .broadcast_add(&mask)
            .unwrap();
            let max = att.max_keepdim(D::Minus1).unwrap().detach();
            let e = att.broadcast_sub(&max).unwrap().exp().unwrap();
            let att = e.broadcast_div(&e.sum_keepdim(D::Minus1).unwrap()).unwrap();
            let o = att
                .matmul(&v)
                .unwrap()
                .transpose(1, 2)
                .unwrap()
                .contiguous()
                .unwrap()
                .reshape((b * t, s.dim))
                .unwrap();
            h = (h + linear(&o, w(4))).unwrap();
            let n = rmsnorm(&h, w(5));
            let gate = linear(&n, w(6)).silu().unwrap();
            h = (h + linear(&(gate * linear(&n, w(8))).unwrap(), w(7))).unwrap();
        }
        let h = rmsnorm(&h, p[1 + 9 * s.layers].as_tensor());
        let cls = if s.shared {
            emb
        } else {
            p[2 + 9 * s.layers].as_tensor()
        };
        let logits = linear(&h, cls);
        let max = logits.max_keepdim(D::Minus1).unwrap().detach();
        let shifted = logits.broadcast_sub(&max).unwrap();
        let lse = shifted
            .exp()
            .unwrap()
            .sum_keepdim(D::Minus1)
            .unwrap()
            .log()
            .unwrap();
        let logp = shifted.broadcast_sub(&lse).unwrap();
        let picked = logp
            .gather(&y.flatten_all().unwrap().unsqueeze(1).unwrap(), 1)
            .unwrap();
        picked.mean_all().unwrap().neg().unwrap()
    }

    pub fn main() {
        let a: Vec<String> = std::env::args().skip(1).collect();
        assert_eq!(
            a.len(),
            6,
            "usage: MODEL.bin TOK.bin CORPUS.txt STEPS MICRO_BATCH SEQ_LEN"
        );
        let (steps, b, t): (usize, usize, usize) = (
            a[3].parse().unwrap(),
            a[4].parse().unwrap(),
            a[5].parse().unwrap(),
        );
        let weights = load_weights(&std::fs::read(&a[0]).unwrap()).unwrap();
        let c = weights.config;
        let tok = Tokenizer::from_bytes(&std::fs::read(&a[1]).unwrap(), c.vocab_size).unwrap();
        let data = encode_corpus(&tok, &std::fs::read_to_string(&a[2]).unwrap());
        let dev = Device::Cpu;
        let params: Vec<Var> = tensor_specs(&c)
            .iter()
            .zip(weights.ordered())
            .map(|(spec, d)| Var::from_slice(d, spec.shape.as_slice(), &dev).unwrap())
            .collect();
        let shape = Shape {
            dim: c.dim,
            layers: c.n_layers,
            heads: c.n_heads,
            kv_heads: c.n_kv_heads,
            vocab: c.vocab_size,
            shared: c.shared_classifier,
        };
        assert_eq!(shape.vocab, c.vocab_size);
        // AdamW as candle-nn's: lr 1e-3, betas (0.9, 0.95), eps 1e-8, weight decay 0.1.
        let (lr, b1, b2, eps, wd): (f64, f64, f64, f64, f64) = (1e-3, 0.9, 0.95, 1e-8, 0.1);
        let mut m: Vec<Tensor> = params.iter().map(|p| p.zeros_like().unwrap()).collect();
        let mut v: Vec<Tensor> = m.clone();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut start = None;
        for step in 1..=steps {
            let mut xs = Vec::with_capacity(b * t);
            let mut ys = Vec::with_capacity(b * t);
            for _ in 0..b {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let i = (rng % (data.len() - t - 1) as u64) as usize;
                xs.extend_from_slice(&data[i..i + t]);
                ys.extend_from_slice(&data[i + 1..i + t + 1]);
            }
            let x = Tensor::from_vec(xs, (b, t), &dev).unwrap();
            let y = Tensor::from_vec(ys, (b, t), &dev)
                .unwrap()
                .to_dtype(DType::U32)
                .unwrap();
            let l = loss(&params, &shape, &x, &y, &dev);
            let grads = l.backward().unwrap();
            let (bc1, bc2) = (1.0 - b1.powi(step as i32), 1.0 - b2.powi(step as i32));
            for (i, p) in params.iter().enumerate() {
                let Some(g) = grads.get(p.as_tensor()) else {
                    continue;
                };
                m[i] = ((&m[i] * b1).unwrap() + (g * (1.0 - b1)).unwrap()).unwrap();
                v[i] = ((&v[i] * b2).unwrap() + (g.sqr().unwrap() * (1.0 - b2)).unwrap()).unwrap();
                let mhat = (&m[i] / bc1).unwrap();
                let vhat = (&v[i] / bc2).unwrap();
                let decayed = (p.as_tensor() * (1.0 - lr * wd)).unwrap();
                let update = (mhat / (vhat.sqrt().unwrap() + eps).unwrap()).unwrap();
                p.set(&(decayed - (update * lr).unwrap()).unwrap()).unwrap();
            }
            let loss_value = l.to_scalar::<f32>().unwrap();
            if step == 1 {
                // The first step pays for allocation; the figure is over the rest.
                start = Some(Instant::now());
            }
            if step == steps {
                let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64()).max(1e-9);
                let tokens = (steps - 1) * b * t;
                println!(
                    "{{\"bench\":\"candle-reference\",\"steps\":{steps},\"loss\":{loss_value},\"tokens_per_s\":{:.1}}}",
                    tokens as f64 / secs
                );
            }
        }
    }
}
