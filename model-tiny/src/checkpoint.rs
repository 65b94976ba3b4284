//! Our own checkpoint format: a safetensors file of f32 tensors named as in llama2.c's `model.py`,
//! with the [`Config`] as JSON in the safetensors metadata under `"config"` (a separate JSON
//! config may be given instead, e.g. a `config.json` written next to it).

use crate::config::Config;
use crate::error::{Error, Result};
use crate::weights::{Weights, tensor_specs};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;

/// The value of the `"format"` metadata key in files we write.
pub const FORMAT: &str = "onramp-model-tiny/1";
const WHAT: &str = "safetensors checkpoint";

/// True when `bytes` looks like a safetensors file (an 8-byte length, then a JSON header).
pub fn is_safetensors(bytes: &[u8]) -> bool {
    if bytes.len() < 9 {
        return false;
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&bytes[..8]);
    let n = u64::from_le_bytes(n);
    n >= 2 && n <= (bytes.len() - 8) as u64 && bytes[8] == b'{'
}

/// Named f32 tensors with their shapes.
pub type NamedTensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// Serialises f32 tensors with string metadata.
pub fn save_tensors(
    tensors: &[(String, Vec<usize>, &[f32])],
    metadata: HashMap<String, String>,
) -> Result<Vec<u8>> {
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, _, data)| data.iter().flat_map(|x| x.to_le_bytes()).collect())
        .collect();
    let mut views = Vec::with_capacity(tensors.len());
    for ((name, shape, _), b) in tensors.iter().zip(&bytes) {
        let view = TensorView::new(Dtype::F32, shape.clone(), b).map_err(|e| {
            Error::format(WHAT, format!("tensor {name}"), "data matching its shape", e)
        })?;
        views.push((name.clone(), view));
    }
    safetensors::tensor::serialize(views, Some(metadata))
        .map_err(|e| Error::format(WHAT, "serialisation", "a writable set of tensors", e))
}

/// Reads every tensor (all must be f32) and the metadata of a safetensors file.
pub fn load_tensors(bytes: &[u8]) -> Result<(NamedTensors, HashMap<String, String>)> {
    let (_, meta) = SafeTensors::read_metadata(bytes)
        .map_err(|e| Error::format(WHAT, "header", "a valid safetensors header", e))?;
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| Error::format(WHAT, "header", "a valid safetensors file", e))?;
    let mut out = HashMap::new();
    for (name, view) in st.iter() {
        if view.dtype() != Dtype::F32 {
            return Err(Error::format(
                WHAT,
                format!("tensor {name}"),
                "dtype F32",
                format!("{:?}", view.dtype()),
            ));
        }
        let data = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        out.insert(name.to_string(), (view.shape().to_vec(), data));
    }
    Ok((out, meta.metadata().clone().unwrap_or_default()))
}

/// Serialises a model: its tensors plus `{"format", "config"}` metadata.
pub fn save_model(weights: &Weights) -> Result<Vec<u8>> {
    save_model_with(weights, HashMap::new())
}

/// [`save_model`] with extra metadata entries.
pub fn save_model_with(
    weights: &Weights,
    mut metadata: HashMap<String, String>,
) -> Result<Vec<u8>> {
    weights.without_biases("a model-tiny checkpoint")?;
    let config = serde_json::to_string(&weights.config)
        .map_err(|e| Error::Usage(format!("cannot serialise config: {e}")))?;
    metadata.insert("format".into(), FORMAT.into());
    metadata.insert("config".into(), config);
    let specs = tensor_specs(&weights.config);
    let tensors: Vec<(String, Vec<usize>, &[f32])> = specs
        .into_iter()
        .zip(weights.ordered())
        .map(|(s, t)| (s.name, s.shape, t))
        .collect();
    save_tensors(&tensors, metadata)
}

/// Parses a JSON [`Config`], naming the field at fault.
pub fn parse_config(json: &str) -> Result<Config> {
    let config: Config = serde_json::from_str(json).map_err(|e| {
        Error::format(
            "model config JSON",
            format!("line {} column {}", e.line(), e.column()),
            "an object with dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len, shared_classifier",
            e,
        )
    })?;
    config.validate()?;
    Ok(config)
}

/// Loads a model written by [`save_model`] (or any safetensors file with the same tensor names);
/// `config_json` overrides the config in the metadata.
pub fn load_model(bytes: &[u8], config_json: Option<&str>) -> Result<Weights> {
    let (mut tensors, meta) = load_tensors(bytes)?;
    let config = match (config_json, meta.get("config").map(String::as_str)) {
        (Some(json), _) | (None, Some(json)) => parse_config(json)?,
        (None, None) => {
            return Err(Error::format(
                WHAT,
                "metadata key \"config\"",
                "the model config as JSON (or a separate config file)",
                "nothing",
            ));
        }
    };
    let mut ordered = Vec::new();
    for spec in tensor_specs(&config) {
        let (shape, data) = tensors.remove(&spec.name).ok_or_else(|| {
            Error::format(
                WHAT,
                format!("tensor {}", spec.name),
                format!("shape {:?}", spec.shape),
                "no such tensor",
            )
        })?;
        if shape != spec.shape {
            return Err(Error::format(
                WHAT,
                format!("tensor {}", spec.name),
                format!("shape {:?}", spec.shape),
                format!("shape {shape:?}"),
            ));
        }
        ordered.push(data);
    }
    if let Some(name) = tensors.keys().min() {
        return Err(Error::format(
            WHAT,
            format!("tensor {name}"),
            format!("only the tensors of {config:?}"),
            "an unexpected tensor",
        ));
    }
    Weights::from_ordered(config, ordered)
}
