//! The dataset check's messages between the Plan page and its Web Worker (`dataset_worker.rs`):
//! the page posts `{file, seq_len, model}` (a `File` cannot travel as JSON; `model` the spec's
//! catalogue model, or `tok<vocab>` for a model of numbers, whose tokenizer the worker counts
//! with where the edge serves it), the worker
//! answers in JSON text, as the model worker does.

use serde::{Deserialize, Serialize};

/// The dataset checker's worker: a binary of its own (`app/worker/src/datacheck.rs`, loaded by
/// `public/datacheck.js`), so that the tokenizer and template code it carries never weighs on the
/// inference worker, which the first page a newcomer opens loads.
pub const DATASET_WORKER_URL: &str = "/datacheck.js";

/// Where the worker fetches a file of a model's tokenizer (`api::datasets::TOKENIZER_FILES`), as
/// the edge serves it.
pub fn tokenizer_url(model: &str, name: &str) -> String {
    format!("/api/models/{model}/tokenizer/{name}")
}

/// Bytes the worker reads from the file at a time.
pub const CHUNK_BYTES: f64 = 4.0 * 1024.0 * 1024.0;

/// One bad line as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BadLineView {
    pub line: u64,
    pub code: String,
    pub en: String,
    pub zh: String,
}

/// What the page shows of a check and carries into the spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetSummary {
    pub name: String,
    pub format: Option<String>,
    /// Padded formats (chat, alpaca, prompt/completion): one example per sequence.
    pub padded: bool,
    pub records: u64,
    pub examples: u64,
    pub tokens: u64,
    pub tokens_uncut: u64,
    /// False: the tokens are an estimate from the text's length.
    pub exact: bool,
    /// What counted the tokens: the model's tokenizer (where the worker fetched it from), or
    /// why there is only an estimate.
    #[serde(default)]
    pub counted_with: String,
    pub seq_len: u32,
    pub truncated: u64,
    pub p50: u32,
    pub p90: u32,
    pub max: u32,
    pub bad_lines: u64,
    pub bad: Vec<BadLineView>,
    pub bytes: u64,
    /// The file's SHA-256 (lowercase hex), which the worker takes in the same pass: an upload's
    /// identity. Empty when not taken.
    #[serde(default)]
    pub sha256: String,
}

impl DatasetSummary {
    pub fn of(name: &str, r: &datacheck::Report) -> Self {
        DatasetSummary {
            name: name.to_string(),
            format: r.format.map(|f| f.name().to_string()),
            padded: r.format.is_some_and(|f| !f.packed()),
            records: r.records,
            examples: r.examples,
            tokens: r.tokens,
            tokens_uncut: r.tokens_uncut,
            exact: r.exact,
            counted_with: r.counted_with.clone(),
            seq_len: r.seq_len,
            truncated: r.truncated,
            p50: r.lengths.p50,
            p90: r.lengths.p90,
            max: r.lengths.max,
            bad_lines: r.bad_lines,
            bad: r
                .bad
                .iter()
                .map(|b| BadLineView {
                    line: b.line,
                    code: b.code.to_string(),
                    en: b.en.clone(),
                    zh: b.zh.clone(),
                })
                .collect(),
            bytes: r.bytes,
            sha256: String::new(),
        }
    }

    /// The `[data]` keys the plan takes from this check: the examples of a padded dataset and
    /// its tokens; none when nothing in it can be trained on.
    pub fn data_keys(&self) -> Vec<(&'static str, u64)> {
        if self.examples == 0 {
            return Vec::new();
        }
        let mut keys = Vec::new();
        if self.padded {
            keys.push(("examples", self.examples));
        }
        keys.push(("tokens", self.tokens.max(1)));
        keys
    }
}

/// Worker → page. `Ready` comes first, once the worker listens: a message posted before it
/// would reach a worker whose wasm is still loading, and be lost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DatasetOutput {
    Ready,
    Progress { read: u64, total: u64 },
    Done(DatasetSummary),
    Error { detail: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_padded_check_gives_examples_and_tokens_and_text_gives_tokens() {
        let est = || datacheck::Estimate { why: "test".into() };
        let r = datacheck::check_bytes(
            Some("a.jsonl"),
            b"{\"prompt\": \"p\", \"completion\": \"c\"}\n{\"x\": 1}\n",
            est(),
            64,
        );
        let s = DatasetSummary::of("a.jsonl", &r);
        assert_eq!(s.data_keys(), [("examples", 1), ("tokens", r.tokens)]);
        assert_eq!((s.bad_lines, s.bad[0].line), (1, 2));
        let t = datacheck::check_bytes(Some("t.txt"), &b"abcd".repeat(100), est(), 10);
        assert_eq!(
            DatasetSummary::of("t.txt", &t).data_keys(),
            [("tokens", 100)]
        );
        let none = datacheck::check_bytes(Some("e.jsonl"), b"", est(), 10);
        assert!(DatasetSummary::of("e", &none).data_keys().is_empty());
        let json = serde_json::to_string(&DatasetOutput::Done(s.clone())).expect("json");
        assert_eq!(
            serde_json::from_str::<DatasetOutput>(&json).expect("back"),
            DatasetOutput::Done(s)
        );
    }
}
