//! A Hugging Face Llama folder: `config.json` and `model.safetensors` (f32, bf16 or f16), as
//! Transformers' `save_pretrained` writes them (onramp-train's trained and merged models). The
//! tensors are renamed to llama2.c's, and the query and key rows are put back into llama2.c's
//! RoPE order: Hugging Face rotates each head's halves (`rotate_half`), llama2.c its neighbouring
//! pairs, and Transformers' conversion script permutes the rows between the two.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::weights::{LayerWeights, Weights};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde_json::Value;

const CONFIG: &str = "config.json";
const WEIGHTS: &str = "model.safetensors";

/// What `config.json` says beyond the architecture: the tokens generation starts and stops at.
#[derive(Debug, Clone, PartialEq)]
pub struct HfModel {
    pub config: Config,
    /// `bos_token_id`, when the config names one.
    pub bos: Option<u32>,
    /// `eos_token_id` (a number or a list): generation stops at any of them.
    pub eos: Vec<u32>,
    /// Whether its query, key and value projections have biases: a Qwen2 (`model_type =
    /// "qwen2"`, a Llama with these), which onramp-train builds for `qkv_bias = true`.
    pub qkv_bias: bool,
}

fn bad(
    at: impl Into<String>,
    expected: impl std::fmt::Display,
    found: impl std::fmt::Display,
) -> Error {
    Error::format(CONFIG, at, expected, found)
}

fn number(doc: &Value, key: &str) -> Result<usize> {
    match doc.get(key) {
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad(key, "a whole number", v)),
        None => Err(bad(key, "a whole number", "nothing (the key is missing)")),
    }
}

fn float(doc: &Value, key: &str, default: f64) -> Result<f32> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(default as f32),
        Some(v) => v
            .as_f64()
            .map(|x| x as f32)
            .ok_or_else(|| bad(key, "a number", v)),
    }
}

fn flag(doc: &Value, key: &str, default: bool) -> Result<bool> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_bool().ok_or_else(|| bad(key, "true or false", v)),
    }
}

fn token_ids(doc: &Value, key: &str) -> Result<Vec<u32>> {
    let one = |v: &Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    match doc.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|v| one(v).ok_or_else(|| bad(key, "token ids", v)))
            .collect(),
        Some(v) => one(v)
            .map(|id| vec![id])
            .ok_or_else(|| bad(key, "a token id", v)),
    }
}

/// The RoPE base, from Transformers 5's `rope_parameters` or the older top-level `rope_theta`;
/// any RoPE scaling (a longer context than the model was trained at) is refused.
fn rope_theta(doc: &Value) -> Result<f32> {
    for key in ["rope_scaling", "rope_parameters"] {
        if let Some(p) = doc.get(key).filter(|p| !p.is_null()) {
            let kind = p
                .get("rope_type")
                .or_else(|| p.get("type"))
                .and_then(Value::as_str);
            if !matches!(kind, None | Some("default")) {
                return Err(bad(
                    format!("{key}.rope_type"),
                    "\"default\" (the playground runs no RoPE scaling)",
                    p,
                ));
            }
            if let Some(theta) = p.get("rope_theta") {
                return theta
                    .as_f64()
                    .map(|t| t as f32)
                    .ok_or_else(|| bad(format!("{key}.rope_theta"), "a number", theta));
            }
        }
    }
    float(doc, "rope_theta", 10000.0)
}

/// Which of the Llama family `config.json` is: a Llama without biases (`false`), or a Qwen2, a
/// Llama with query, key and value biases (`true`), without a sliding window.
fn family(doc: &Value) -> Result<bool> {
    let kind = doc.get("model_type").and_then(Value::as_str).unwrap_or("");
    let qkv_bias = match kind {
        "llama" => false,
        "qwen2" => true,
        _ => {
            return Err(bad(
                "model_type",
                "\"llama\" or \"qwen2\" (the playground runs Llama-family models)",
                format!("{kind:?}"),
            ));
        }
    };
    if qkv_bias && flag(doc, "use_sliding_window", false)? {
        return Err(bad(
            "use_sliding_window",
            "false (the playground attends to every earlier position)",
            true,
        ));
    }
    for key in ["attention_bias", "mlp_bias"] {
        if flag(doc, key, false)? {
            return Err(bad(
                key,
                "false (the playground's Llama has no biases)",
                true,
            ));
        }
    }
    Ok(qkv_bias)
}

/// Reads `config.json`: a Llama (`model_type = "llama"`) without biases, or a Qwen2 (a Llama
/// with query, key and value biases) without a sliding window, with SiLU and plain RoPE, which is
/// every model onramp-train builds from its numbers. Anything else is refused, naming the key.
pub fn config(json: &[u8]) -> Result<HfModel> {
    let doc: Value =
        serde_json::from_slice(json).map_err(|e| bad("the whole file", "a JSON object", e))?;
    if !doc.is_object() {
        return Err(bad("the whole file", "a JSON object", "another JSON value"));
    }
    let qkv_bias = family(&doc)?;
    let act = doc
        .get("hidden_act")
        .and_then(Value::as_str)
        .unwrap_or("silu");
    if act != "silu" {
        return Err(bad("hidden_act", "\"silu\"", format!("{act:?}")));
    }
    if let Some(q) = doc.get("quantization_config").filter(|q| !q.is_null()) {
        return Err(bad(
            "quantization_config",
            "none (weights in f32, bf16 or f16)",
            q,
        ));
    }
    let (dim, heads) = (
        number(&doc, "hidden_size")?,
        number(&doc, "num_attention_heads")?,
    );
    let kv_heads = match doc.get("num_key_value_heads") {
        None | Some(Value::Null) => heads,
        Some(_) => number(&doc, "num_key_value_heads")?,
    };
    if let Some(h) = doc.get("head_dim").filter(|h| !h.is_null())
        && h.as_u64() != Some((dim / heads.max(1)) as u64)
    {
        return Err(bad(
            "head_dim",
            format!("hidden_size / num_attention_heads ({})", dim / heads.max(1)),
            h,
        ));
    }
    let config = Config {
        dim,
        hidden_dim: number(&doc, "intermediate_size")?,
        n_layers: number(&doc, "num_hidden_layers")?,
        n_heads: heads,
        n_kv_heads: kv_heads,
        vocab_size: number(&doc, "vocab_size")?,
        seq_len: number(&doc, "max_position_embeddings")?,
        shared_classifier: flag(&doc, "tie_word_embeddings", false)?,
        norm_eps: float(&doc, "rms_norm_eps", 1e-6)?,
        rope_theta: rope_theta(&doc)?,
    };
    config.validate()?;
    Ok(HfModel {
        config,
        bos: token_ids(&doc, "bos_token_id")?.first().copied(),
        eos: token_ids(&doc, "eos_token_id")?,
        qkv_bias,
    })
}

/// One tensor as f32, whatever of f32, bf16 or f16 it was saved in.
fn floats(view: &TensorView<'_>, name: &str) -> Result<Vec<f32>> {
    let data = view.data();
    let pairs = || {
        data.chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    Ok(match view.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::BF16 => pairs().map(|b| half::bf16::from_bits(b).to_f32()).collect(),
        Dtype::F16 => pairs().map(|b| half::f16::from_bits(b).to_f32()).collect(),
        other => {
            return Err(Error::format(
                WEIGHTS,
                format!("tensor {name}"),
                "f32, bf16 or f16",
                format!("{other:?}"),
            ));
        }
    })
}

/// Query (or key) rows between the two RoPE orders. In Hugging Face's, row `t·head/2 + i` of a
/// head holds member `t` of pair `i`; llama2.c wants pair `i`'s members at rows `2i` and `2i+1`.
/// `to_llama2c` reads Hugging Face's order and writes llama2.c's; otherwise the reverse.
fn reorder(w: &[f32], heads: usize, head: usize, dim: usize, to_llama2c: bool) -> Vec<f32> {
    let mut out = vec![0.0; w.len()];
    let half = head / 2;
    for h in 0..heads {
        for t in 0..2 {
            for i in 0..half {
                let hf = (h * head + t * half + i) * dim;
                let ours = (h * head + 2 * i + t) * dim;
                let (from, to) = if to_llama2c { (hf, ours) } else { (ours, hf) };
                out[to..to + dim].copy_from_slice(&w[from..from + dim]);
            }
        }
    }
    out
}

/// Hugging Face's query (or key) rows in llama2.c's order.
fn unpermute(w: &[f32], heads: usize, head: usize, dim: usize) -> Vec<f32> {
    reorder(w, heads, head, dim, true)
}

/// llama2.c's query (or key) rows in Hugging Face's order.
fn permute(w: &[f32], heads: usize, head: usize, dim: usize) -> Vec<f32> {
    reorder(w, heads, head, dim, false)
}

type Named<'a> = (String, Vec<usize>, std::borrow::Cow<'a, [f32]>);

/// `config.json` of a Llama of `c`'s numbers, as Transformers writes it; a Qwen2's when the
/// blocks have query, key and value biases.
fn config_json(c: &Config, qkv_bias: bool) -> Value {
    let mut doc = llama_json(c);
    if qkv_bias {
        doc["architectures"] = serde_json::json!(["Qwen2ForCausalLM"]);
        doc["model_type"] = "qwen2".into();
        doc["use_sliding_window"] = false.into();
        if let Some(o) = doc.as_object_mut() {
            o.remove("attention_bias");
            o.remove("mlp_bias");
        }
    }
    doc
}

fn llama_json(c: &Config) -> Value {
    serde_json::json!({
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": c.dim,
        "intermediate_size": c.hidden_dim,
        "num_hidden_layers": c.n_layers,
        "num_attention_heads": c.n_heads,
        "num_key_value_heads": c.n_kv_heads,
        "head_dim": c.head_size(),
        "vocab_size": c.vocab_size,
        "max_position_embeddings": c.seq_len,
        "tie_word_embeddings": c.shared_classifier,
        "rms_norm_eps": c.norm_eps,
        "rope_parameters": {"rope_theta": c.rope_theta, "rope_type": "default"},
        "hidden_act": "silu",
        "attention_bias": false,
        "mlp_bias": false,
        "bos_token_id": crate::tokenizer::BOS,
        "eos_token_id": crate::tokenizer::EOS,
        "dtype": "float32",
    })
}

/// `weights` as a Hugging Face folder's `config.json` and `model.safetensors` (f32), as
/// Transformers writes a `LlamaForCausalLM` (a `Qwen2ForCausalLM` with biases); [`load`] reads
/// them back to the same weights.
pub fn save(weights: &Weights) -> Result<(String, Vec<u8>)> {
    let c = weights.config;
    let config = config_json(&c, weights.has_qkv_biases());
    let d = c.dim;
    let mut tensors: Vec<Named<'_>> = vec![(
        "model.embed_tokens.weight".into(),
        vec![c.vocab_size, d],
        (&weights.tok_embeddings[..]).into(),
    )];
    for (l, w) in weights.layers.iter().enumerate() {
        tensors.extend(layer_tensors(&c, l, w));
    }
    let mut put = |name: String, shape: Vec<usize>, data| tensors.push((name, shape, data));
    put(
        "model.norm.weight".into(),
        vec![d],
        (&weights.norm[..]).into(),
    );
    if let Some(o) = &weights.output {
        put(
            "lm_head.weight".into(),
            vec![c.vocab_size, d],
            (&o[..]).into(),
        );
    }
    let refs: Vec<(String, Vec<usize>, &[f32])> = tensors
        .iter()
        .map(|(n, s, d)| (n.clone(), s.clone(), &d[..]))
        .collect();
    let meta = std::collections::HashMap::from([("format".to_string(), "pt".to_string())]);
    let bytes = crate::checkpoint::save_tensors(&refs, meta)?;
    Ok((config.to_string(), bytes))
}

/// Block `l`'s tensors as Transformers names and lays them out.
fn layer_tensors<'a>(c: &Config, l: usize, w: &'a LayerWeights) -> Vec<Named<'a>> {
    let (d, hs, kv, h) = (c.dim, c.head_size(), c.kv_dim(), c.hidden_dim);
    let p = format!("model.layers.{l}");
    let mut tensors: Vec<Named<'a>> = Vec::new();
    let mut put = |name: String, shape: Vec<usize>, data| tensors.push((name, shape, data));
    put(
        format!("{p}.input_layernorm.weight"),
        vec![d],
        (&w.attention_norm[..]).into(),
    );
    put(
        format!("{p}.self_attn.q_proj.weight"),
        vec![d, d],
        permute(&w.wq, c.n_heads, hs, d).into(),
    );
    put(
        format!("{p}.self_attn.k_proj.weight"),
        vec![kv, d],
        permute(&w.wk, c.n_kv_heads, hs, d).into(),
    );
    put(
        format!("{p}.self_attn.v_proj.weight"),
        vec![kv, d],
        (&w.wv[..]).into(),
    );
    if let Some(b) = &w.bqkv {
        let (bq, rest) = b.split_at(d.min(b.len()));
        let (bk, bv) = rest.split_at(kv.min(rest.len()));
        put(
            format!("{p}.self_attn.q_proj.bias"),
            vec![d],
            permute(bq, c.n_heads, hs, 1).into(),
        );
        put(
            format!("{p}.self_attn.k_proj.bias"),
            vec![kv],
            permute(bk, c.n_kv_heads, hs, 1).into(),
        );
        put(format!("{p}.self_attn.v_proj.bias"), vec![kv], bv.into());
    }
    put(
        format!("{p}.self_attn.o_proj.weight"),
        vec![d, d],
        (&w.wo[..]).into(),
    );
    put(
        format!("{p}.post_attention_layernorm.weight"),
        vec![d],
        (&w.ffn_norm[..]).into(),
    );
    put(
        format!("{p}.mlp.gate_proj.weight"),
        vec![h, d],
        (&w.w1[..]).into(),
    );
    put(
        format!("{p}.mlp.down_proj.weight"),
        vec![d, h],
        (&w.w2[..]).into(),
    );
    put(
        format!("{p}.mlp.up_proj.weight"),
        vec![h, d],
        (&w.w3[..]).into(),
    );
    tensors
}

/// The weights of the folder whose `config.json` is `config_json` and whose `model.safetensors`
/// is `safetensors`: every tensor the config asks for, with its shape; no other tensor.
pub fn load(config_json: &[u8], safetensors: &[u8]) -> Result<(Weights, HfModel)> {
    load_shards(config_json, &[safetensors])
}

/// [`load`] for a folder whose weights are split over several files (`shards`, the files its
/// `model.safetensors.index.json` names, [`crate::hf_index::shard_files`]): each tensor from the
/// file that holds it, the same tensors in all.
pub fn load_shards(config_json: &[u8], shards: &[&[u8]]) -> Result<(Weights, HfModel)> {
    let model = config(config_json)?;
    let c = model.config;
    let files = shards
        .iter()
        .map(|b| {
            SafeTensors::deserialize(b)
                .map_err(|e| Error::format(WEIGHTS, "header", "a valid safetensors file", e))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut r = Reader {
        files: &files,
        used: std::collections::HashSet::new(),
    };
    let layers = (0..c.n_layers)
        .map(|l| r.layer(&c, l, model.qkv_bias))
        .collect::<Result<Vec<_>>>()?;
    let (v, d) = (c.vocab_size, c.dim);
    let tok_embeddings = r.take("model.embed_tokens.weight".into(), [v, d])?;
    let norm = r.take("model.norm.weight".into(), [d, 0])?;
    let output = if c.shared_classifier {
        // Transformers leaves a tied head out of the file; one written anyway is the same matrix.
        r.used.insert("lm_head.weight".into());
        None
    } else {
        Some(r.take("lm_head.weight".into(), [v, d])?)
    };
    r.nothing_else()?;
    let weights = Weights {
        config: c,
        tok_embeddings,
        layers,
        norm,
        output,
    };
    Ok((weights, model))
}

/// The tensors of a file as [`load`] takes them, remembering which it took.
struct Reader<'a> {
    files: &'a [SafeTensors<'a>],
    used: std::collections::HashSet<String>,
}

impl Reader<'_> {
    /// Tensor `name` as f32, of `shape` (`[n, 0]` for a vector).
    fn take(&mut self, name: String, shape: [usize; 2]) -> Result<Vec<f32>> {
        let mut found = self.files.iter().filter_map(|st| st.tensor(&name).ok());
        let view = found.next().ok_or_else(|| {
            Error::format(WEIGHTS, format!("tensor {name}"), "present", "missing")
        })?;
        if found.next().is_some() {
            return Err(Error::format(
                WEIGHTS,
                format!("tensor {name}"),
                "in one file",
                "in two of the shards",
            ));
        }
        let want: Vec<usize> = shape.iter().copied().filter(|&n| n > 0).collect();
        if view.shape() != want.as_slice() {
            return Err(Error::format(
                WEIGHTS,
                format!("tensor {name}"),
                format!("shape {want:?} (config.json's numbers)"),
                format!("{:?}", view.shape()),
            ));
        }
        let out = floats(&view, &name)?;
        // A NaN or an infinity would not fail later: it would make every token the same one.
        if let Some(i) = out.iter().position(|x| !x.is_finite()) {
            return Err(Error::format(
                WEIGHTS,
                format!("tensor {name} element {i}"),
                "a finite number",
                out[i],
            ));
        }
        self.used.insert(name);
        Ok(out)
    }

    /// Block `l`, its query and key rows (and their biases, `qkv_bias`) in llama2.c's order.
    fn layer(&mut self, c: &Config, l: usize, qkv_bias: bool) -> Result<LayerWeights> {
        let (d, h, kv, hs) = (c.dim, c.hidden_dim, c.kv_dim(), c.head_size());
        let p = format!("model.layers.{l}");
        let wq = self.take(format!("{p}.self_attn.q_proj.weight"), [d, d])?;
        let wk = self.take(format!("{p}.self_attn.k_proj.weight"), [kv, d])?;
        let bqkv = if qkv_bias {
            let bq = self.take(format!("{p}.self_attn.q_proj.bias"), [d, 0])?;
            let bk = self.take(format!("{p}.self_attn.k_proj.bias"), [kv, 0])?;
            let bv = self.take(format!("{p}.self_attn.v_proj.bias"), [kv, 0])?;
            Some(
                [
                    unpermute(&bq, c.n_heads, hs, 1),
                    unpermute(&bk, c.n_kv_heads, hs, 1),
                    bv,
                ]
                .concat(),
            )
        } else {
            None
        };
        Ok(LayerWeights {
            bqkv,
            attention_norm: self.take(format!("{p}.input_layernorm.weight"), [d, 0])?,
            wq: unpermute(&wq, c.n_heads, hs, d),
            wk: unpermute(&wk, c.n_kv_heads, hs, d),
            wv: self.take(format!("{p}.self_attn.v_proj.weight"), [kv, d])?,
            wo: self.take(format!("{p}.self_attn.o_proj.weight"), [d, d])?,
            ffn_norm: self.take(format!("{p}.post_attention_layernorm.weight"), [d, 0])?,
            w1: self.take(format!("{p}.mlp.gate_proj.weight"), [h, d])?,
            w2: self.take(format!("{p}.mlp.down_proj.weight"), [d, h])?,
            w3: self.take(format!("{p}.mlp.up_proj.weight"), [h, d])?,
        })
    }

    /// Refuses a file with tensors besides a Llama's (an adapter's, another architecture's).
    fn nothing_else(&self) -> Result<()> {
        let mut extra: Vec<&str> = self
            .files
            .iter()
            .flat_map(SafeTensors::names)
            .filter(|n| !self.used.contains(*n) && !n.ends_with(".rotary_emb.inv_freq"))
            .collect();
        extra.sort_unstable();
        let Some(first) = extra.first() else {
            return Ok(());
        };
        let hint = if first.contains("lora_") {
            " (a PEFT adapter's tensors: open the merged model, `output.merge_adapter = true`)"
        } else {
            ""
        };
        Err(Error::format(
            WEIGHTS,
            format!("tensor {first}"),
            format!("only a Llama's tensors{hint}"),
            format!("{} tensors more", extra.len()),
        ))
    }
}

#[cfg(test)]
mod tests;
