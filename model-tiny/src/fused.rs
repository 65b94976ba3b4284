//! Two fused candle ops for training, each one pass forward and one pass backward where the
//! plain candle expressions take about ten: the causal softmax of attention scores, and the mean
//! cross-entropy of the logits. Written as plain candle ops, every step of these allocates, fills
//! and later returns a tensor of `batch × heads × seq²` floats (16 MB for the default template,
//! dozens of them a step), which was most of a training step's time; here the masked half of
//! each score row is never exponentiated, and nothing in between is stored.

use crate::kernels;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, DType, Error, Layout, Result, Shape, Tensor};

/// A contiguous f32 view of `storage` under `layout`, or an error naming the op.
fn f32s<'a>(op: &str, storage: &'a CpuStorage, layout: &Layout) -> Result<&'a [f32]> {
    let all = storage.as_slice::<f32>()?;
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&all[start..end]),
        None => Err(Error::Msg(format!("{op}: the input must be contiguous"))),
    }
}

fn u32s<'a>(op: &str, storage: &'a CpuStorage, layout: &Layout) -> Result<&'a [u32]> {
    let all = storage.as_slice::<u32>()?;
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&all[start..end]),
        None => Err(Error::Msg(format!("{op}: the targets must be contiguous"))),
    }
}

/// The length of the last two (equal) dimensions of attention scores `[.., t, t]`.
fn square_tail(op: &str, layout: &Layout) -> Result<usize> {
    match layout.dims() {
        [.., a, b] if a == b && *a > 0 => Ok(*a),
        dims => Err(Error::Msg(format!(
            "{op}: expected scores of shape [.., t, t], got {dims:?}"
        ))),
    }
}

/// Rows handed to one thread at a time: a few thousand floats of work each.
const MIN_ROWS: usize = 32;

/// Calls `f(r, row)` for each `width`-long row `r` of `out`, at least `min_rows` rows to a
/// thread at a time: on all cores natively, in order in the browser (one thread). Each row is
/// written by one call, so the result does not depend on how rows are shared out.
pub(crate) fn for_rows<F>(out: &mut [f32], width: usize, min_rows: usize, f: F)
where
    F: Fn(usize, &mut [f32]) + Sync + Send,
{
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(width)
            .with_min_len(min_rows)
            .enumerate()
            .for_each(|(r, row)| f(r, row));
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = min_rows;
        out.chunks_mut(width)
            .enumerate()
            .for_each(|(r, row)| f(r, row));
    }
}

/// `softmax(scale · x)` over the last dimension with position `i` (the row's index within its
/// `t × t` block) attending only to `0..=i`; the masked entries are exactly 0.
struct CausalSoftmax {
    scale: f32,
}

impl CustomOp1 for CausalSoftmax {
    fn name(&self) -> &'static str {
        "causal-softmax"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let t = square_tail(self.name(), layout)?;
        let x = f32s(self.name(), storage, layout)?;
        // The masked tail of each row stays 0.
        let mut out = vec![0.0f32; x.len()];
        for_rows(&mut out, t, MIN_ROWS, |r, out_row| {
            let seen = &x[r * t..r * t + r % t + 1];
            let row = &mut out_row[..seen.len()];
            // In loops of their own over the inference kernels' 8-lane max, branch-free exp and
            // sum, so that each vectorises.
            let max = kernels::max(seen);
            for (o, &v) in row.iter_mut().zip(seen) {
                *o = kernels::exp((v - max) * self.scale);
            }
            let inv = 1.0 / kernels::sum(row);
            row.iter_mut().for_each(|e| *e *= inv);
        });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let grad = res.contiguous()?.apply_op2_no_bwd(
            &grad_res.contiguous()?,
            &CausalSoftmaxGrad { scale: self.scale },
        )?;
        Ok(Some(grad))
    }
}

/// The gradient of [`CausalSoftmax`] from its output `y` and the output's gradient `g`:
/// `scale · y · (g − Σ g·y)` per row.
struct CausalSoftmaxGrad {
    scale: f32,
}

impl CustomOp2 for CausalSoftmaxGrad {
    fn name(&self) -> &'static str {
        "causal-softmax-grad"
    }

    fn cpu_fwd(
        &self,
        y_storage: &CpuStorage,
        y_layout: &Layout,
        g_storage: &CpuStorage,
        g_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let t = square_tail(self.name(), y_layout)?;
        let y = f32s(self.name(), y_storage, y_layout)?;
        let g = f32s(self.name(), g_storage, g_layout)?;
        if y.len() != g.len() {
            return Err(Error::Msg(format!(
                "{}: output and gradient differ in size",
                self.name()
            )));
        }
        let mut out = vec![0.0f32; y.len()];
        for_rows(&mut out, t, MIN_ROWS, |r, out_row| {
            let n = r % t + 1;
            let (y_row, g_row) = (&y[r * t..r * t + n], &g[r * t..r * t + n]);
            let dot = kernels::dot(y_row, g_row);
            for (o, (y, g)) in out_row.iter_mut().zip(y_row.iter().zip(g_row)) {
                *o = self.scale * y * (g - dot);
            }
        });
        Ok((CpuStorage::F32(out), y_layout.shape().clone()))
    }
}

/// Causal attention weights from raw scores `[.., t, t]` (`q · kᵀ`): the softmax of
/// `scale · scores` over keys at or before each query's position.
pub fn causal_softmax(scores: &Tensor, scale: f64) -> Result<Tensor> {
    scores.contiguous()?.apply_op1(CausalSoftmax {
        scale: scale as f32,
    })
}

/// Mean over rows of `logsumexp(logits) − logits[target]`, for logits `[n, v]` and u32 targets
/// `[n]`.
struct CrossEntropy;

/// Checks the shapes and returns `(n, v)`.
fn logits_shape(op: &str, logits: &Layout, targets: &Layout) -> Result<(usize, usize)> {
    match (logits.dims(), targets.dims()) {
        (&[n, v], &[m]) if n == m && n > 0 && v > 0 => Ok((n, v)),
        (l, t) => Err(Error::Msg(format!(
            "{op}: expected logits [n, v] and targets [n], got {l:?} and {t:?}"
        ))),
    }
}

/// `exp(x − max)` of one row into `out`, and `(max, ln Σ exp(x − max))`.
fn exp_and_log_sum(row: &[f32], out: &mut [f32]) -> (f32, f32) {
    let max = kernels::max(row);
    for (o, &v) in out.iter_mut().zip(row) {
        *o = kernels::exp(v - max);
    }
    (max, kernels::sum(&out[..row.len()]).ln())
}

fn target_index(op: &str, target: u32, v: usize) -> Result<usize> {
    let i = target as usize;
    if i < v {
        Ok(i)
    } else {
        Err(Error::Msg(format!(
            "{op}: target {target} is outside a vocabulary of {v}"
        )))
    }
}

impl CustomOp2 for CrossEntropy {
    fn name(&self) -> &'static str {
        "cross-entropy"
    }

    fn cpu_fwd(
        &self,
        l_storage: &CpuStorage,
        l_layout: &Layout,
        t_storage: &CpuStorage,
        t_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (_, v) = logits_shape(self.name(), l_layout, t_layout)?;
        let logits = f32s(self.name(), l_storage, l_layout)?;
        let targets = u32s(self.name(), t_storage, t_layout)?;
        for &target in targets {
            target_index(self.name(), target, v)?;
        }
        // Each row's loss on its own, then their sum in order: the same total however the rows
        // were shared out.
        let mut losses = vec![0.0f32; targets.len()];
        for_rows(&mut losses, 1, MIN_ROWS, |r, loss| {
            let row = &logits[r * v..(r + 1) * v];
            let (max, lse) = exp_and_log_sum(row, &mut vec![0.0; v]);
            loss[0] = max + lse - row[targets[r] as usize];
        });
        let total: f64 = losses.iter().map(|&l| f64::from(l)).sum();
        let mean = (total / targets.len() as f64) as f32;
        Ok((CpuStorage::F32(vec![mean]), Shape::from(())))
    }

    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let grad = logits
            .contiguous()?
            .apply_op2_no_bwd(&targets.contiguous()?, &CrossEntropyGrad)?
            .broadcast_mul(grad_res)?;
        Ok((Some(grad), None))
    }
}

/// The gradient of the mean cross-entropy with respect to the logits: `(softmax − onehot) / n`.
struct CrossEntropyGrad;

impl CustomOp2 for CrossEntropyGrad {
    fn name(&self) -> &'static str {
        "cross-entropy-grad"
    }

    fn cpu_fwd(
        &self,
        l_storage: &CpuStorage,
        l_layout: &Layout,
        t_storage: &CpuStorage,
        t_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (n, v) = logits_shape(self.name(), l_layout, t_layout)?;
        let logits = f32s(self.name(), l_storage, l_layout)?;
        let targets = u32s(self.name(), t_storage, t_layout)?;
        let inv_n = 1.0 / n as f32;
        for &target in targets {
            target_index(self.name(), target, v)?;
        }
        let mut out = vec![0.0f32; logits.len()];
        for_rows(&mut out, v, MIN_ROWS, |r, out_row| {
            let row = &logits[r * v..(r + 1) * v];
            // softmax = exp(x − max) / Σ exp(x − max), each divided by n.
            let (_, lse) = exp_and_log_sum(row, out_row);
            let k = (-lse).exp() * inv_n;
            out_row.iter_mut().for_each(|o| *o *= k);
            out_row[targets[r] as usize] -= inv_n;
        });
        Ok((CpuStorage::F32(out), l_layout.shape().clone()))
    }
}

/// Mean negative log-likelihood of `targets` `[n]` (any integer dtype) under `logits` `[n, v]`.
pub fn cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let targets = targets.to_dtype(DType::U32)?;
    logits.contiguous()?.apply_op2(&targets, CrossEntropy)
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use candle_core::{D, Device, Var};

    /// The plain candle expressions these ops replace.
    fn plain_causal_softmax(x: &Tensor, scale: f64) -> Tensor {
        let t = x.dim(D::Minus1).unwrap();
        let mask: Vec<f32> = (0..t * t)
            .map(|i| {
                if i % t > i / t {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let mask = Tensor::from_vec(mask, (t, t), x.device()).unwrap();
        let x = (x * scale).unwrap().broadcast_add(&mask).unwrap();
        let max = x.max_keepdim(D::Minus1).unwrap().detach();
        let e = x.broadcast_sub(&max).unwrap().exp().unwrap();
        e.broadcast_div(&e.sum_keepdim(D::Minus1).unwrap()).unwrap()
    }

    fn plain_cross_entropy(logits: &Tensor, targets: &Tensor) -> Tensor {
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
        let picked = logp.gather(&targets.unsqueeze(1).unwrap(), 1).unwrap();
        picked.mean_all().unwrap().neg().unwrap()
    }

    pub(crate) fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    }

    #[test]
    fn causal_softmax_and_its_gradient_match_the_plain_ops() {
        let dev = Device::Cpu;
        let x = Var::from_tensor(&Tensor::randn(0f32, 3.0, (2, 3, 7, 7), &dev).unwrap()).unwrap();
        let weights = Tensor::randn(0f32, 1.0, (2, 3, 7, 7), &dev).unwrap();
        let fused = causal_softmax(x.as_tensor(), 0.35).unwrap();
        let plain = plain_causal_softmax(x.as_tensor(), 0.35);
        assert!(max_diff(&fused, &plain) < 1e-6);
        let grad = |y: &Tensor| {
            let g = (y * &weights)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            g.get(x.as_tensor()).unwrap().clone()
        };
        let d = max_diff(&grad(&fused), &grad(&plain));
        assert!(d < 1e-5, "gradients differ by {d}");
    }

    #[test]
    fn cross_entropy_and_its_gradient_match_the_plain_ops() {
        let dev = Device::Cpu;
        let logits = Var::from_tensor(&Tensor::randn(0f32, 4.0, (6, 11), &dev).unwrap()).unwrap();
        let targets = Tensor::new(&[0u32, 10, 3, 3, 7, 1], &dev).unwrap();
        let fused = cross_entropy(logits.as_tensor(), &targets).unwrap();
        let plain = plain_cross_entropy(logits.as_tensor(), &targets);
        assert!(max_diff(&fused, &plain) < 1e-5);
        let grad = |loss: &Tensor| {
            let g = (loss * 3.0).unwrap().backward().unwrap();
            g.get(logits.as_tensor()).unwrap().clone()
        };
        let d = max_diff(&grad(&fused), &grad(&plain));
        assert!(d < 1e-6, "gradients differ by {d}");
    }

    #[test]
    fn bad_targets_and_shapes_are_errors() {
        let dev = Device::Cpu;
        let logits = Tensor::zeros((2, 4), DType::F32, &dev).unwrap();
        let out_of_range = Tensor::new(&[0u32, 4], &dev).unwrap();
        let e = cross_entropy(&logits, &out_of_range)
            .unwrap_err()
            .to_string();
        assert!(e.contains("target 4 is outside a vocabulary of 4"), "{e}");
        let not_square = Tensor::zeros((2, 3, 4), DType::F32, &dev).unwrap();
        assert!(causal_softmax(&not_square, 1.0).is_err());
    }
}
