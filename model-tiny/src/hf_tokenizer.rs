//! A Hugging Face `tokenizer.json` of the SentencePiece kind (Llama's, and the one Transformers
//! writes for onramp-train's models of numbers): BPE with byte fallback over `▁`-marked pieces.
//! It encodes exactly as the `tokenizers` library does and decodes as its decoders chain does,
//! through the same [`Tokenizer`] as llama2.c's (the pieces are stored with `▁` as a space, as
//! llama2.c's `tokenizer.bin` stores them). Byte-level tokenizers (GPT-2's, Llama 3's, Qwen's)
//! are refused by name.

use crate::error::{Error, Result};
use crate::tokenizer::{HfRules, Prepend, Tokenizer};
use serde_json::Value;
use std::collections::HashMap;

const WHAT: &str = "tokenizer.json";
const SPACE: &str = "\u{2581}";

fn bad(
    at: impl Into<String>,
    expected: impl std::fmt::Display,
    found: impl std::fmt::Display,
) -> Error {
    Error::format(WHAT, at, expected, found)
}

fn kind(v: &Value) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

/// How the text is prepared before BPE: `▁` for spaces and one in front, by a Metaspace
/// pre-tokenizer or by Llama 2's normalizers (`Prepend`, `Replace`); and whether the text is
/// split into words at its spaces (Metaspace's `split`, which `tokenizers` takes as true when a
/// file does not say it, as in files written before it existed).
fn preparation(doc: &Value) -> Result<(Prepend, bool)> {
    let pre = doc.get("pre_tokenizer").filter(|v| !v.is_null());
    let norm = doc.get("normalizer").filter(|v| !v.is_null());
    if let Some(pre) = pre {
        if kind(pre) != Some("Metaspace") {
            return Err(bad(
                "pre_tokenizer.type",
                "Metaspace (a SentencePiece-style tokenizer; byte-level ones are not read here)",
                format!("{:?}", kind(pre).unwrap_or("?")),
            ));
        }
        if pre.get("replacement").and_then(Value::as_str) != Some(SPACE) {
            return Err(bad(
                "pre_tokenizer.replacement",
                format!("{SPACE:?}"),
                &pre["replacement"],
            ));
        }
        let split = match pre.get("split") {
            None | Some(Value::Null) => true,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad("pre_tokenizer.split", "true or false", v))?,
        };
        if let Some(n) = norm {
            return Err(bad(
                "normalizer",
                "none beside a Metaspace pre-tokenizer",
                n,
            ));
        }
        // Files written before `prepend_scheme` say `add_prefix_space` (false: never).
        let legacy = match pre.get("add_prefix_space").and_then(Value::as_bool) {
            Some(false) => Some("never"),
            _ => None,
        };
        let prepend = match pre.get("prepend_scheme").and_then(Value::as_str).or(legacy) {
            Some("never") => Prepend::Never,
            _ => Prepend::UnlessSpace,
        };
        return Ok((prepend, split));
    }
    let steps: Vec<&Value> = match norm {
        Some(n) if kind(n) == Some("Sequence") => n
            .get("normalizers")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        Some(n) => vec![n],
        None => Vec::new(),
    };
    let prepends = steps
        .iter()
        .any(|s| kind(s) == Some("Prepend") && s["prepend"] == SPACE);
    let replaces = steps.iter().any(|s| {
        kind(s) == Some("Replace") && s["pattern"]["String"] == " " && s["content"] == SPACE
    });
    if !replaces || steps.len() != 1 + prepends as usize {
        return Err(bad(
            "normalizer",
            "Llama's (Prepend \"▁\", Replace \" \" with \"▁\") or a Metaspace pre-tokenizer",
            norm.map_or("none".into(), |n| n.to_string()),
        ));
    }
    let prepend = if prepends {
        Prepend::Always
    } else {
        Prepend::Never
    };
    Ok((prepend, false))
}

/// `merges`, written either `"a b"` (older files) or `["a", "b"]`.
fn merge_pair(m: &Value) -> Option<(&str, &str)> {
    match m {
        Value::String(s) => s.split_once(' '),
        Value::Array(a) if a.len() == 2 => Some((a[0].as_str()?, a[1].as_str()?)),
        _ => None,
    }
}

/// The first token of the post-processor's template for one sequence, when it is a special one
/// (Llama's `<s>`).
fn template_bos(doc: &Value, ids: &HashMap<String, u32>) -> Option<u64> {
    let post = doc.get("post_processor").filter(|v| !v.is_null())?;
    let first = post.get("single")?.as_array()?.first()?;
    let name = first.get("SpecialToken")?.get("id")?.as_str()?;
    let listed = post
        .get("special_tokens")?
        .get(name)?
        .get("ids")?
        .as_array()?;
    listed
        .first()?
        .as_u64()
        .or_else(|| ids.get(name).map(|&id| u64::from(id)))
}

/// [`template_bos`], refused when it is past the vocabulary (every prompt would then fail).
fn checked_bos(doc: &Value, ids: &HashMap<String, u32>, vocab_size: usize) -> Result<Option<u32>> {
    match template_bos(doc, ids) {
        Some(id) if id >= vocab_size as u64 => Err(bad(
            "post_processor's first special token",
            format!("an id below the model's vocabulary ({vocab_size})"),
            id,
        )),
        bos => Ok(bos.map(|id| id as u32)),
    }
}

/// Every piece's id (the model's vocabulary, then the added tokens), each below `vocab_size`.
fn piece_ids(doc: &Value, model: &Value, vocab_size: usize) -> Result<HashMap<String, u32>> {
    let map = model
        .get("vocab")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("model.vocab", "an object", "nothing"))?;
    let mut ids: HashMap<String, u32> = HashMap::with_capacity(map.len());
    for (piece, id) in map {
        let id = id
            .as_u64()
            .filter(|&i| i < vocab_size as u64)
            .ok_or_else(|| {
                bad(
                    format!("model.vocab[{piece:?}]"),
                    format!("an id below the model's vocabulary ({vocab_size})"),
                    id,
                )
            })?;
        ids.insert(piece.clone(), id as u32);
    }
    for t in doc
        .get("added_tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(c), Some(id)) = (t["content"].as_str(), t["id"].as_u64())
            && id < vocab_size as u64
        {
            ids.entry(c.to_string()).or_insert(id as u32);
        }
    }
    Ok(ids)
}

/// `(left, right) → (rank, merged)`, every piece one of the vocabulary's.
fn merges(model: &Value, ids: &HashMap<String, u32>) -> Result<HashMap<(u32, u32), (u32, u32)>> {
    let mut merges = HashMap::new();
    let listed = model
        .get("merges")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (rank, m) in listed.iter().enumerate() {
        let at = || format!("model.merges[{rank}]");
        let (a, b) = merge_pair(m).ok_or_else(|| bad(at(), "a pair of pieces", m))?;
        let id = |p: &str| {
            ids.get(p)
                .copied()
                .ok_or_else(|| bad(at(), "pieces of the vocabulary", format!("{p:?}")))
        };
        let merged = format!("{a}{b}");
        merges.insert((id(a)?, id(b)?), (rank as u32, id(&merged)?));
    }
    Ok(merges)
}

/// `<0x00>`…`<0xFF>`'s ids when the model falls back to bytes (all of them, then).
fn byte_pieces(model: &Value, ids: &HashMap<String, u32>) -> Result<Option<Vec<u32>>> {
    let byte_fallback = model
        .get("byte_fallback")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let bytes = byte_fallback.then(|| {
        (0..=255u8)
            .map(|b| ids.get(&format!("<0x{b:02X}>")).copied())
            .collect::<Option<Vec<u32>>>()
    });
    match bytes {
        Some(None) => Err(bad(
            "model.vocab",
            "the 256 byte pieces <0x00>…<0xFF> (byte_fallback)",
            "some missing",
        )),
        Some(Some(b)) => Ok(Some(b)),
        None => Ok(None),
    }
}

impl Tokenizer {
    /// Reads a `tokenizer.json` for a model of `vocab_size` tokens, stopping generation at `stop`
    /// (`config.json`'s `eos_token_id`).
    pub fn from_hf_json(json: &[u8], vocab_size: usize, stop: &[u32]) -> Result<Self> {
        let doc: Value =
            serde_json::from_slice(json).map_err(|e| bad("the whole file", "JSON", e))?;
        let model = doc
            .get("model")
            .ok_or_else(|| bad("model", "an object", "nothing"))?;
        if kind(model) != Some("BPE") {
            return Err(bad(
                "model.type",
                "\"BPE\"",
                format!("{:?}", kind(model).unwrap_or("?")),
            ));
        }
        let (prepend, split) = preparation(&doc)?;
        let ids = piece_ids(&doc, model, vocab_size)?;
        // Pieces as llama2.c stores them: `▁` is a space. Ids the file does not name stay empty.
        let mut vocab = vec![Vec::new(); vocab_size];
        for (piece, &id) in &ids {
            vocab[id as usize] = piece.replace(SPACE, " ").into_bytes();
        }
        let merges = merges(model, &ids)?;
        let bytes = byte_pieces(model, &ids)?;
        let unk = model
            .get("unk_token")
            .and_then(Value::as_str)
            .and_then(|u| ids.get(u).copied());
        let lookup = vocab
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(i, p)| (p.clone(), i as u32))
            .collect();
        let max_token_length = vocab.iter().map(Vec::len).max().unwrap_or(1) as u32;
        Ok(Tokenizer {
            scores: vec![0.0; vocab_size],
            vocab,
            max_token_length,
            lookup,
            hf: Some(HfRules {
                bos: checked_bos(&doc, &ids, vocab_size)?,
                merges,
                prepend,
                split,
                bytes,
                unk,
                stop: stop.to_vec(),
            }),
        })
    }

    /// `tokenizers`' encoding: spaces as `▁` (stored here as spaces) and one in front as the
    /// rules say, one token per character (its UTF-8 bytes' pieces where the character is not
    /// one, else the unknown token), then merges by rank; the template's BOS first when `bos`.
    pub(crate) fn encode_hf(
        &self,
        hf: &HfRules,
        text: &[u8],
        bos: bool,
        eos: bool,
        prefix: bool,
    ) -> Vec<u32> {
        let text = String::from_utf8_lossy(text);
        let mut tokens = Vec::with_capacity(text.len() + 3);
        if bos && let Some(b) = hf.bos {
            tokens.push(b);
        }
        let lead = prefix
            && !text.is_empty()
            && match hf.prepend {
                Prepend::UnlessSpace => !text.starts_with(' '),
                Prepend::Always => true,
                Prepend::Never => false,
            };
        let mut buf = [0u8; 4];
        let mut word = Vec::new();
        for ch in lead.then_some(' ').into_iter().chain(text.chars()) {
            // Split: a space starts the next word, and merges never cross into it.
            if hf.split && ch == ' ' && !word.is_empty() {
                self.merge(&mut word);
                tokens.append(&mut word);
            }
            let piece = ch.encode_utf8(&mut buf).as_bytes();
            match (self.id_of(piece), &hf.bytes) {
                (Some(id), _) => word.push(id),
                (None, Some(bytes)) => word.extend(piece.iter().map(|&b| bytes[b as usize])),
                (None, None) => word.extend(hf.unk),
            }
        }
        self.merge(&mut word);
        tokens.append(&mut word);
        if eos && let Some(&e) = hf.stop.first() {
            tokens.push(e);
        }
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Byte pieces at 3…258 as in Llama's vocabulary, then `▁`, `a`, `b`, `ab`, `▁a`, `b▁`.
    fn file(pre: Value, normalizer: Value) -> Vec<u8> {
        let mut vocab = json!({"<unk>": 0, "<s>": 1, "</s>": 2});
        for b in 0..=255u32 {
            vocab[format!("<0x{b:02X}>")] = json!(b + 3);
        }
        for (i, p) in [SPACE, "a", "b", "ab", "\u{2581}a", "b\u{2581}"]
            .iter()
            .enumerate()
        {
            vocab[*p] = json!(259 + i);
        }
        let doc = json!({
            "model": {"type": "BPE", "vocab": vocab, "byte_fallback": true, "unk_token": "<unk>",
                      "merges": [["a", "b"], [SPACE, "a"], ["b", SPACE]]},
            "pre_tokenizer": pre, "normalizer": normalizer,
            "post_processor": {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        });
        doc.to_string().into_bytes()
    }

    fn metaspace() -> Value {
        json!({"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first", "split": false})
    }

    #[test]
    fn merges_go_by_rank_and_unknown_characters_by_their_bytes() {
        let tok = Tokenizer::from_hf_json(&file(metaspace(), Value::Null), 300, &[2]).unwrap();
        // `a b` (rank 0) is merged before `▁ a` (rank 1): llama2.c's scores would not say so.
        assert_eq!(tok.encode("ab", true, false), [1, 259, 262]);
        assert_eq!(tok.encode("ab", false, true), [259, 262, 2]);
        // A leading space is the prefix itself; é is its two UTF-8 bytes.
        assert_eq!(tok.encode(" ab", false, false), [259, 262]);
        assert_eq!(tok.encode("é", false, false), [259, 0xC3 + 3, 0xA9 + 3]);
        assert_eq!(tok.encode("", true, false), [1]);
        assert_eq!(tok.stop_tokens(), [2]);
        assert_eq!(tok.decode(1, 262), b"ab");
        assert_eq!(tok.decode(260, 263), b" a");
    }

    #[test]
    fn a_metaspace_that_splits_merges_each_word_alone() {
        // `b ▁` merges across a space unless the text is split into words there; a file that
        // does not say `split` splits, as `tokenizers` reads it.
        let joined = Tokenizer::from_hf_json(&file(metaspace(), Value::Null), 300, &[2]).unwrap();
        assert_eq!(joined.encode("b b", false, false), [259, 264, 261]);
        for split in [Some(json!(true)), None] {
            let mut pre = metaspace();
            match split {
                Some(v) => pre["split"] = v,
                None => drop(pre.as_object_mut().unwrap().remove("split")),
            }
            let tok = Tokenizer::from_hf_json(&file(pre, Value::Null), 300, &[2]).unwrap();
            assert_eq!(tok.encode("b b", false, false), [259, 261, 259, 261]);
            assert_eq!(tok.encode("b  ab", false, false), [259, 261, 259, 259, 262]);
        }
        let mut pre = metaspace();
        pre["split"] = json!("yes");
        let e = Tokenizer::from_hf_json(&file(pre, Value::Null), 300, &[2]).unwrap_err();
        assert!(e.to_string().contains("pre_tokenizer.split"), "{e}");
    }

    #[test]
    fn llama_2s_normalizers_always_put_the_space_in_front() {
        let norm = json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]});
        let tok = Tokenizer::from_hf_json(&file(Value::Null, norm), 300, &[2]).unwrap();
        assert_eq!(tok.encode(" ab", false, false), [259, 259, 262]);
    }

    #[test]
    fn byte_level_and_broken_files_are_refused_by_where() {
        let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false});
        let e = Tokenizer::from_hf_json(&file(byte_level, Value::Null), 300, &[2]).unwrap_err();
        assert!(e.to_string().contains("pre_tokenizer.type"), "{e}");
        let e = Tokenizer::from_hf_json(&file(metaspace(), Value::Null), 100, &[2]).unwrap_err();
        assert!(e.to_string().contains("model.vocab"), "{e}");
        let e = Tokenizer::from_hf_json(b"{", 300, &[2]).unwrap_err();
        assert!(e.to_string().contains("tokenizer.json"), "{e}");
    }
}
