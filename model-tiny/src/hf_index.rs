//! A Hugging Face folder whose weights Transformers split over several files
//! (`save_pretrained(max_shard_size=…)`): `model.safetensors.index.json` maps each tensor to the
//! file that holds it. [`shard_files`] reads which files those are; [`crate::hf::load_shards`]
//! reads the weights from them.

use crate::error::{Error, Result};
use serde_json::Value;

/// The index file's name in the folder.
pub const INDEX: &str = "model.safetensors.index.json";

/// The files the index names, each once, in name order: plain names of `.safetensors` files in
/// the same folder (a path, a hidden file or another kind of file is refused by where it is).
pub fn shard_files(index_json: &[u8]) -> Result<Vec<String>> {
    let bad = |at: &str, expected: &str, found: &dyn std::fmt::Display| {
        Error::format(INDEX, at, expected, found)
    };
    let doc: Value = serde_json::from_slice(index_json).map_err(|e| bad("the file", "JSON", &e))?;
    let Some(Value::Object(map)) = doc.get("weight_map") else {
        return Err(bad(
            "weight_map",
            "an object from tensor names to files",
            &"nothing of that kind",
        ));
    };
    let mut files: Vec<String> = Vec::new();
    for (tensor, file) in map {
        let at = format!("weight_map.{tensor}");
        let Some(name) = file.as_str() else {
            return Err(bad(&at, "a file name", file));
        };
        let plain = !name.is_empty()
            && name.len() <= 255
            && !name.starts_with('.')
            && !name.contains(['/', '\\'])
            && name.ends_with(".safetensors");
        if !plain {
            return Err(bad(
                &at,
                "the name of a .safetensors file in the same folder",
                &format!("{name:?}"),
            ));
        }
        if !files.iter().any(|f| f == name) {
            files.push(name.to_string());
        }
    }
    if files.is_empty() {
        return Err(bad("weight_map", "at least one tensor", &"none"));
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::weights::Weights;
    use safetensors::tensor::{SafeTensors, TensorView};

    /// `file` cut into two files and their index: the first half of its tensors (by name) in
    /// one, the rest in the other, as Transformers shards.
    fn split(file: &[u8]) -> (Vec<u8>, Vec<u8>, String) {
        let st = SafeTensors::deserialize(file).unwrap();
        let mut names = st.names();
        names.sort();
        let half = names.len() / 2;
        let mut map = serde_json::Map::new();
        let part = |names: &[&str], file: &str, map: &mut serde_json::Map<String, Value>| {
            let views: Vec<(String, TensorView<'_>)> = names
                .iter()
                .map(|n| {
                    map.insert((*n).to_string(), Value::String(file.into()));
                    let v = st.tensor(n).unwrap();
                    let view = TensorView::new(v.dtype(), v.shape().to_vec(), v.data()).unwrap();
                    ((*n).to_string(), view)
                })
                .collect();
            safetensors::serialize(views, None).unwrap()
        };
        let one = part(&names[..half], "model-00001-of-00002.safetensors", &mut map);
        let two = part(&names[half..], "model-00002-of-00002.safetensors", &mut map);
        let index = serde_json::json!({"metadata": {"total_size": file.len()}, "weight_map": map});
        (one, two, index.to_string())
    }

    #[test]
    fn a_folder_split_over_two_files_loads_as_the_whole_file_does() {
        let config = Config {
            n_layers: 2,
            shared_classifier: false,
            ..Config::stories260k()
        };
        let weights = Weights::random(config, 5).unwrap();
        let (json, whole) = crate::hf::save(&weights).unwrap();
        let (one, two, index) = split(&whole);
        let files = shard_files(index.as_bytes()).unwrap();
        assert_eq!(
            files,
            [
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors"
            ]
        );
        let (back, _) = crate::hf::load_shards(json.as_bytes(), &[&one, &two]).unwrap();
        assert_eq!(back, weights);
        // Either order; a missing shard names the tensor it lacks.
        let (back, _) = crate::hf::load_shards(json.as_bytes(), &[&two, &one]).unwrap();
        assert_eq!(back, weights);
        let e = crate::hf::load_shards(json.as_bytes(), &[&one]).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn an_index_naming_paths_or_other_files_is_refused_by_where() {
        let refused = |map: &str, at: &str| {
            let e = shard_files(format!(r#"{{"weight_map": {map}}}"#).as_bytes()).unwrap_err();
            assert!(e.to_string().contains(at), "{map}: {e}");
        };
        refused(r#"{"a": "../../x.safetensors"}"#, "weight_map.a");
        refused(r#"{"a": "/etc/passwd"}"#, "weight_map.a");
        refused(r#"{"a": "sub/m.safetensors"}"#, "weight_map.a");
        refused(r#"{"a": ".m.safetensors"}"#, "weight_map.a");
        refused(r#"{"a": "model.bin"}"#, "weight_map.a");
        refused(r#"{"a": 3}"#, "weight_map.a");
        refused(r#"{}"#, "weight_map");
        assert!(shard_files(b"[1]").is_err());
        assert!(shard_files(b"not json").is_err());
    }
}
