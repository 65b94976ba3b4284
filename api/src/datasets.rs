//! An account's datasets: files the user uploads (from the Plan page or `onramp datasets
//! upload`) after the checker in the browser or the CLI read them, kept in R2 by the edge and
//! named in a spec by their id (`data.dataset = "ds_…"`).
//!
//! A dataset is content-addressed within its account: its id is made from its SHA-256, so the
//! same file uploaded twice is stored once, and another account's file of the same content is
//! another account's dataset (ids are looked up with their owner, never alone). The upload is
//! the artifacts' in parts (`crate::artifacts`): `POST /api/datasets` declares the file and is
//! told which parts arrived, `PUT /api/datasets/{id}?part=N` sends one, and the last completes
//! it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The prefix of every uploaded dataset's id.
pub const ID_PREFIX: &str = jobspec::validate::DATASET_ID_PREFIX;
/// The hex digits of the SHA-256 an id keeps (128 bits: no two files of one account share it).
pub const ID_HEX: usize = jobspec::validate::DATASET_ID_HEX;
/// The longest file name a dataset keeps, in bytes.
pub const MAX_FILE_NAME_BYTES: usize = 255;
/// The largest count a dataset's declaration may hold (what jobspec's `data.examples` and
/// `data.tokens` accept).
pub const MAX_COUNT: u64 = 1_000_000_000_000;

/// The id of the dataset whose content has this SHA-256 (64 lowercase hex digits).
pub fn dataset_id(sha256: &str) -> String {
    format!("{ID_PREFIX}{}", &sha256[..ID_HEX.min(sha256.len())])
}

/// Every uploaded dataset a spec names, with the key that names it: the one it trains on
/// (`data.dataset`) and the one it is evaluated on (`eval.dataset`). The edge checks that the
/// account holds each, and a job fetches each with its token.
pub fn named_in_spec(spec: &jobspec::JobSpec) -> Vec<(&'static str, &str)> {
    let eval = spec.eval.dataset.as_deref();
    let mut named: Vec<(&'static str, &str)> = Vec::new();
    for (key, id) in [
        ("data.dataset", Some(spec.data.dataset.as_str())),
        ("eval.dataset", eval),
    ] {
        // Each once: an eval set that is the training set is fetched and checked once.
        if let Some(id) = id.filter(|id| is_dataset_id(id) && !named.iter().any(|(_, n)| n == id)) {
            named.push((key, id));
        }
    }
    named
}

/// Whether `s` has the shape of an uploaded dataset's id.
pub fn is_dataset_id(s: &str) -> bool {
    jobspec::validate::is_dataset_id(s)
}

/// What is wrong with a dataset's file name, if anything: 1 to 255 bytes of printable
/// characters (no control character, no `/` or `\`): it is shown, never used as a path.
pub fn file_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the file name is empty".into());
    }
    if name.len() > MAX_FILE_NAME_BYTES {
        return Some(format!(
            "the file name has {} bytes; at most {MAX_FILE_NAME_BYTES}",
            name.len()
        ));
    }
    name.chars()
        .find(|c| c.is_control() || matches!(c, '/' | '\\'))
        .map(|c| format!("{c:?} may not be in a file name"))
}

/// The name a file is declared with: its own where [`file_name_problem`] finds none, else made
/// one (control characters dropped, slashes as `_`, cut to [`MAX_FILE_NAME_BYTES`]) keeping its
/// extension, by which the checker and the trainer choose the file's layout.
pub fn declared_name(name: &str) -> String {
    if file_name_problem(name).is_none() {
        return name.to_string();
    }
    let clean: String = name
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| if matches!(c, '/' | '\\') { '_' } else { c })
        .collect();
    let (stem, ext) = match clean.rsplit_once('.') {
        Some((stem, ext)) if ext.len() <= 16 => (stem, format!(".{ext}")),
        _ => (clean.as_str(), String::new()),
    };
    let mut stem: String = stem.to_string();
    while stem.len() + ext.len() > MAX_FILE_NAME_BYTES {
        stem.pop();
    }
    if stem.is_empty() {
        stem = "dataset".into();
    }
    format!("{stem}{ext}")
}

/// `POST /api/datasets`: the file the user will upload, with what the checker found in it. The
/// same declaration again resumes the upload; a file already stored answers at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDataset {
    /// The file's own name (shown in lists; never a path).
    #[schemars(length(min = 1, max = MAX_FILE_NAME_BYTES))]
    pub name: String,
    /// The file's size in bytes (at least one byte: an empty file holds nothing to train on).
    #[schemars(range(min = 1))]
    pub size: u64,
    /// The file's SHA-256, 64 lowercase hex digits: its identity, and what the job checks the
    /// file it fetches against.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
    /// The records' format the checker found: `chat`, `alpaca`, `prompt_completion` or `text`.
    pub format: String,
    /// Examples per epoch the checker counted (sequences, for text).
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub examples: u64,
    /// Tokens per epoch the checker counted.
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub tokens: u64,
    /// Whether the tokens were counted with the model's own tokenizer (else estimated).
    #[serde(default)]
    pub exact: bool,
    /// The size of every part but the last; the edge's default when absent.
    #[serde(default)]
    #[schemars(range(min = crate::artifacts::MIN_PART_BYTES, max = crate::artifacts::MAX_PART_BYTES))]
    pub part_size: Option<u64>,
}

/// One dataset, as its owner sees it: stored, or an upload under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Dataset {
    /// What a spec names it by: `data.dataset = "ds_…"`.
    pub id: String,
    pub name: String,
    pub size: u64,
    pub sha256: String,
    pub format: String,
    pub examples: u64,
    pub tokens: u64,
    pub exact: bool,
    pub part_size: u64,
    /// How many parts the file takes.
    pub parts: u64,
    /// The parts that arrived, in order: the next to send is `received + 1`.
    pub received: u64,
    /// All parts arrived: the dataset is stored and may be named in a spec.
    pub complete: bool,
    /// When it was declared (RFC 3339).
    pub created_at: String,
}

/// `GET /api/datasets`: the account's datasets, newest first, and its use of the quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DatasetList {
    pub datasets: Vec<Dataset>,
    /// Bytes the account's datasets take, uploads under way included.
    pub used_bytes: u64,
    pub quota_bytes: u64,
}

/// `DELETE /api/datasets/{id}`: the dataset is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DatasetDeleted {
    pub id: String,
    pub freed_bytes: u64,
}

/// The files of a catalogue model's tokenizer that the edge serves to the browser's dataset check
/// (`GET /api/models/{id}/tokenizer/{name}`), so that the page counts tokens as the trainer
/// does: the Hugging Face `tokenizer.json`, which counting needs, and what may lie beside it
/// (the chat template and special tokens). An operator stores them from the model's folder
/// (`PUT /api/admin/models/{id}/tokenizer/{name}`).
pub const TOKENIZER_FILES: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
];
/// The id under which the edge keeps the tokenizer of a model of numbers (a custom `[model]`
/// architecture) of vocabulary `vocab`: `tok<vocab>`, as onramp-train names the SentencePiece
/// model it trains such a model with (`ONRAMP_MODELS/tok<vocab>.model`). The operator exports it
/// with `python -m onramp_train.export_tokenizer VOCAB OUT` and stores it like a catalogue
/// model's.
pub fn vocab_tokenizer_id(vocab: u32) -> String {
    format!("tok{vocab}")
}

/// The vocabulary a [`vocab_tokenizer_id`] names (`tok512`, in any case), if `id` is one: `tok`
/// then a number from 1 without leading zeros, so that each vocabulary has one id.
pub fn vocab_of_tokenizer_id(id: &str) -> Option<u32> {
    let digits = id.get(..3)?.eq_ignore_ascii_case("tok").then(|| &id[3..])?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The largest tokenizer file the edge keeps: the catalogue's largest `tokenizer.json` (a
/// 150K-token vocabulary) is under 12 MB.
pub const MAX_TOKENIZER_FILE_BYTES: u64 = 32 << 20;

/// `PUT /api/admin/models/{id}/tokenizer/{name}`: the file is stored and served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenizerFileStored {
    /// The catalogue's id of the model.
    pub model: String,
    pub name: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// The `[data]` keys a spec that trains by epochs and names an uploaded dataset takes from its
/// record (the edge on submission, `onramp submit` before it checks the spec): those of a
/// dataset of `format` with `examples` and `tokens` that the spec's `data` leaves out.
pub fn count_ops(
    spec: &jobspec::JobSpec,
    format: &str,
    examples: u64,
    tokens: u64,
) -> Vec<jobspec::patch::PatchOp> {
    let data = &spec.data;
    let op = |path: &str, n: u64| jobspec::patch::PatchOp {
        path: path.into(),
        value: serde_json::json!(n.max(1)),
    };
    let mut ops = Vec::new();
    // A run of so many steps is planned without them.
    if examples == 0 || spec.train.steps.is_some() {
        return ops;
    }
    if format != "text" && data.examples.is_none() {
        ops.push(op("data.examples", examples));
    }
    if data.tokens.is_none() {
        ops.push(op("data.tokens", tokens));
    }
    ops
}

/// `text` (the spec `spec` was parsed from, TOML or `json`) with `ops` applied, as TOML: in
/// place, comments kept, where the TOML allows; else the patched spec written out. `None` when
/// there is nothing to apply or the patch does not apply.
pub fn patched_toml(
    text: &str,
    json: bool,
    spec: &jobspec::JobSpec,
    ops: &[jobspec::patch::PatchOp],
) -> Option<String> {
    if ops.is_empty() {
        return None;
    }
    (!json)
        .then(|| jobspec::patch::apply_patch_toml(text, ops))
        .flatten()
        .or_else(|| {
            jobspec::patch::apply_patch(spec, ops)
                .ok()
                .map(|s| s.to_toml())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_of_numbers_tokenizer_has_one_id_per_vocabulary() {
        assert_eq!(vocab_tokenizer_id(512), "tok512");
        assert_eq!(vocab_of_tokenizer_id("tok512"), Some(512));
        assert_eq!(vocab_of_tokenizer_id("TOK32000"), Some(32000));
        for not in [
            "tok", "tok0", "tok0512", "tok-1", "tok+1", "tok 1", "tok1x", "to512", "tök1",
        ] {
            assert_eq!(vocab_of_tokenizer_id(not), None, "{not}");
        }
        assert_eq!(vocab_of_tokenizer_id("tok99999999999"), None);
    }

    #[test]
    fn ids_and_names() {
        let sha = "ab".repeat(32);
        let id = dataset_id(&sha);
        assert_eq!(id.len(), ID_PREFIX.len() + ID_HEX);
        assert!(is_dataset_id(&id));
        for bad in ["ds_", "ds_ABAB", "alpaca-zh", &format!("{id}0"), "ds_zz"] {
            assert!(!is_dataset_id(bad), "{bad}");
        }
        assert_eq!(file_name_problem("mine 1.jsonl"), None);
        assert_eq!(file_name_problem("数据.json"), None);
        for bad in ["", "a/b", "a\\b", "a\nb", &"x".repeat(256)] {
            assert!(file_name_problem(bad).is_some(), "{bad:?}");
            // What is declared instead is a name, with the extension kept.
            let made = declared_name(&format!("{bad}.txt"));
            assert!(file_name_problem(&made).is_none(), "{made:?}");
            assert!(made.ends_with(".txt"), "{made:?}");
        }
        assert_eq!(declared_name("notes\u{7}.md"), "notes.md");
        assert_eq!(declared_name("a/b.jsonl"), "a_b.jsonl");
        assert_eq!(declared_name("\n"), "dataset");
        assert_eq!(declared_name("mine 1.jsonl"), "mine 1.jsonl");
    }

    #[test]
    fn a_spec_naming_an_uploaded_dataset_takes_its_counts_where_it_gives_none() {
        let spec = |examples: Option<u64>, tokens: Option<u64>| {
            let (v, d) =
                jobspec::validate_toml(include_str!("../../jobspec/specs/7b-lora-4090.toml"));
            let mut s = v.unwrap_or_else(|| panic!("{d:?}")).spec().clone();
            (s.data.examples, s.data.tokens) = (examples, tokens);
            s
        };
        let set = |s: jobspec::JobSpec, format| {
            count_ops(&s, format, 1200, 345_678)
                .into_iter()
                .map(|o| (o.path, o.value.as_u64().unwrap()))
                .collect::<Vec<_>>()
        };
        // A padded format: its examples (an epoch is them over the batch) and its tokens.
        assert_eq!(
            set(spec(None, None), "chat"),
            [
                ("data.examples".into(), 1200),
                ("data.tokens".into(), 345_678)
            ]
        );
        // Given tokens alone (as if packed), the examples still come.
        assert_eq!(
            set(spec(None, Some(9)), "alpaca"),
            [("data.examples".to_string(), 1200)]
        );
        // Packed text: tokens only; what the spec gives stays.
        assert_eq!(
            set(spec(None, None), "text"),
            [("data.tokens".to_string(), 345_678)]
        );
        assert!(set(spec(Some(5), Some(9)), "prompt_completion").is_empty());
        assert!(count_ops(&spec(None, None), "chat", 0, 0).is_empty());
        // A run of so many steps needs no counts.
        let mut steps = spec(None, None);
        (steps.train.epochs, steps.train.steps) = (None, Some(40));
        assert!(set(steps, "chat").is_empty());
    }
}
