//! The messages between the page and the inference worker. Both sides send them as JSON text
//! through `postMessage`, so that a message the other side cannot read is an error naming what
//! was wrong rather than a silently ignored `undefined`.

use serde::{Deserialize, Serialize};

/// The Cache API cache that holds downloaded models. Bump its version when the cached bytes'
/// meaning changes, so that old entries are never read. `public/worker.js` names it too (its
/// prefetch looks there before downloading); a test keeps the two in step.
pub const MODEL_CACHE: &str = "onramp-models-v1";

/// The localStorage key under which the page remembers that the default model was loaded (and so
/// put into [`MODEL_CACHE`]): its value is that cache's name. The page starts the worker with it
/// in the URL's fragment, and `public/worker.js` downloads the default model at once only when it
/// is absent, without first asking the Cache API (slow on a fresh profile) for what cannot be
/// there. `public/index.html` reads it too.
pub const MODEL_CACHED_KEY: &str = "onramp-model-cache";

/// Where a model lives: its checkpoint and the tokenizer that goes with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSource {
    /// What the page shows, e.g. `stories260K`.
    pub name: String,
    pub model_url: String,
    pub tokenizer_url: String,
    /// A Hugging Face folder's `config.json`: `model_url` is then its `model.safetensors` and
    /// `tokenizer_url` its `tokenizer.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_url: Option<String>,
    /// A folder whose weights are split over several files: `model_url` is then its
    /// `model.safetensors.index.json`, and these are the folder's `.safetensors` files, each
    /// name (within the folder) with its URL.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<(String, String)>,
    /// A job's trained model (`/?model=<job id>`): the worker reads the job's artifacts and opens
    /// its Hugging Face folder ([`crate::api_wire::playable`]) when it has one, else the URLs
    /// above (a tiny-train checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// The largest model the playground opens, in parameters: a tab holds it in f32 twice while it
/// loads (the downloaded file and the weights), which stays well under wasm's 4 GiB.
pub const BROWSER_MAX_PARAMS: u64 = 150_000_000;

impl ModelSource {
    /// The default model, shipped with the app in `dist/models/`.
    pub fn stories260k() -> Self {
        ModelSource {
            name: "stories260K".into(),
            model_url: "/models/stories260K.bin".into(),
            tokenizer_url: "/models/tok512.bin".into(),
            config_url: None,
            shards: Vec::new(),
            job: None,
        }
    }
}

/// The sampling settings of one generation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenerateRequest {
    pub prompt: String,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    /// Forward passes including the prompt's (llama2.c's `-n`); 0 means the model's context, up
    /// to [`MAX_TOKENS`] (a model may declare a context of millions of positions).
    pub max_tokens: u32,
}

/// The most forward passes one request may ask for.
pub const MAX_TOKENS: u32 = 4096;

/// The longest prompt, in bytes (UTF-8): more than [`MAX_TOKENS`] positions of any tokenizer's
/// text. A share link may carry a quarter of a MiB of it, whose encoding (merges quadratic in
/// its length) would hold the worker for a minute, Stop unheard, for tokens no model reads.
pub const MAX_PROMPT_BYTES: usize = 16 * 1024;

impl GenerateRequest {
    /// The forward passes this request runs: `max_tokens`, or [`MAX_TOKENS`] for 0 (the
    /// model's context clamps both).
    pub fn steps(&self) -> usize {
        match self.max_tokens {
            0 => MAX_TOKENS as usize,
            n => n as usize,
        }
    }
}

impl GenerateRequest {
    /// Checks the ranges the sampler needs, naming the first setting that is out of range.
    pub fn check(&self) -> Result<(), WorkerError> {
        let bad = |what: &str, detail: String| {
            Err(WorkerError {
                kind: ErrorKind::BadInput,
                detail: format!("{what}: {detail}"),
            })
        };
        if !(self.temperature.is_finite() && (0.0..=2.0).contains(&self.temperature)) {
            return bad("temperature", format!("{} is not in 0–2", self.temperature));
        }
        if !(self.top_p.is_finite() && (0.0..=1.0).contains(&self.top_p)) {
            return bad("top_p", format!("{} is not in 0–1", self.top_p));
        }
        if self.seed == 0 {
            // The xorshift state 0 stays 0: every draw would be the same.
            return bad("seed", "must be at least 1".into());
        }
        if self.max_tokens > MAX_TOKENS {
            return bad(
                "max_tokens",
                format!("{} is more than {MAX_TOKENS}", self.max_tokens),
            );
        }
        if self.prompt.len() > MAX_PROMPT_BYTES {
            return bad(
                "prompt",
                format!(
                    "{} bytes is more than {MAX_PROMPT_BYTES}; shorten it",
                    self.prompt.len()
                ),
            );
        }
        Ok(())
    }
}

/// Page → worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerInput {
    /// Fetch (or take from the Cache API) a model and its tokenizer.
    Load(ModelSource),
    Generate(GenerateRequest),
    /// End the running generation after the current token.
    Stop,
}

/// Longest time generated text waits in the worker before it is sent to the page.
pub const TOKEN_BATCH_MS: f64 = 16.0;

/// Worker → page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerOutput {
    /// The worker's wasm is running and listening.
    Ready,
    /// Download progress of the model being loaded (`total` when the server sent a length).
    Progress {
        loaded: u64,
        total: Option<u64>,
    },
    /// The model is ready to generate.
    Loaded {
        name: String,
        /// True when nothing was downloaded.
        from_cache: bool,
        params: u64,
    },
    /// The text of the tokens generated since the last message (complete UTF-8; partial
    /// characters wait for their rest; empty when those tokens print nothing). The first token
    /// comes alone, at once; the rest in batches of at most a frame's time
    /// ([`TOKEN_BATCH_MS`]), so that the page redraws once a frame, not once a token.
    Token {
        text: String,
        /// How many tokens the text is.
        tokens: u32,
    },
    /// The generation ended.
    Done {
        tokens: u32,
        stopped: bool,
        /// Milliseconds the worker took from the first token to the last (its yields and
        /// messages included): the generation's own pace, which the time the page receives
        /// the batches at cannot show (256 tokens of stories260K take about 15 ms, less than
        /// one redraw of the page).
        generate_ms: f64,
    },
    Error(WorkerError),
}

/// What went wrong in the worker, by kind (the page translates the kind) with the details.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerError {
    pub kind: ErrorKind,
    pub detail: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Fetching the model or tokenizer failed (network, HTTP status, cache).
    Download,
    /// The bytes are not a model or tokenizer we can read.
    Format,
    /// The model failed while generating.
    Generate,
    /// A setting out of range, or a message the worker cannot read.
    BadInput,
    /// Generate before Load, or a second Generate while one runs.
    NotReady,
    /// The model has more parameters than a browser tab holds ([`BROWSER_MAX_PARAMS`]).
    TooLarge,
    /// The job trained a PEFT adapter and no merged model (`output.merge_adapter`).
    AdapterOnly,
}

/// Turns a byte stream of token pieces into complete UTF-8 text: a piece may end inside a
/// multi-byte character (byte-fallback tokens), which is held back until its rest arrives.
#[derive(Default, Debug)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes and returns the text that is now complete (invalid bytes become U+FFFD).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // An incomplete character at the end: keep it for the next piece.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(n) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + n);
                        }
                    }
                }
            }
        }
    }

    /// Whatever is left at the end, lossily.
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

/// Figures of the current or last generation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    /// `performance.now()` when Generate was sent.
    pub started_ms: f64,
    /// `performance.now()` when the first text arrived.
    pub first_token_at_ms: Option<f64>,
    pub last_token_at_ms: f64,
    pub tokens: u32,
    /// Set when the generation ended: `Some(true)` when stopped by the user.
    pub stopped: Option<bool>,
    /// Set when the generation ended: the worker's time from its first token to its last.
    pub generate_ms: Option<f64>,
}

impl Metrics {
    pub fn ttft_ms(&self) -> Option<f64> {
        self.first_token_at_ms.map(|t| t - self.started_ms)
    }

    /// Tokens per second since the first token (the prompt-to-first-token wait is in TTFT): the
    /// worker's own pace once the generation ended, and while it runs, the pace the batches
    /// arrive at.
    pub fn tokens_per_s(&self) -> Option<f64> {
        let dt_ms = match self.generate_ms {
            Some(ms) => ms,
            None => self.last_token_at_ms - self.first_token_at_ms?,
        };
        (self.tokens > 1 && dt_ms > 0.0).then(|| f64::from(self.tokens - 1) / (dt_ms / 1000.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_tagged_json() {
        let m = WorkerInput::Load(ModelSource::stories260k());
        let json = serde_json::to_string(&m).unwrap();
        assert!(
            json.starts_with(r#"{"type":"load","name":"stories260K""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<WorkerInput>(&json).unwrap(), m);
        let out = WorkerOutput::Error(WorkerError {
            kind: ErrorKind::Download,
            detail: "HTTP 404".into(),
        });
        let json = serde_json::to_string(&out).unwrap();
        assert_eq!(
            json,
            r#"{"type":"error","kind":"download","detail":"HTTP 404"}"#
        );
        assert_eq!(serde_json::from_str::<WorkerOutput>(&json).unwrap(), out);
        assert!(serde_json::from_str::<WorkerInput>(r#"{"type":"fly"}"#).is_err());
    }

    #[test]
    fn settings_out_of_range_are_named() {
        let ok = GenerateRequest {
            prompt: String::new(),
            temperature: 0.0,
            top_p: 0.9,
            seed: 1,
            max_tokens: 200,
        };
        assert!(ok.check().is_ok());
        let hot = GenerateRequest {
            temperature: f32::NAN,
            ..ok.clone()
        };
        let e = hot.check().unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadInput);
        assert!(e.detail.starts_with("temperature"), "{}", e.detail);
        let e = GenerateRequest {
            top_p: 1.5,
            ..ok.clone()
        }
        .check()
        .unwrap_err();
        assert!(e.detail.starts_with("top_p"), "{}", e.detail);
        assert_eq!(ok.steps(), 200);
        // 0 is the model's context, but never more than the most a request may ask.
        let whole = GenerateRequest {
            max_tokens: 0,
            ..ok
        };
        assert!(whole.check().is_ok());
        assert_eq!(whole.steps(), MAX_TOKENS as usize);
        // A prompt past the limit (a share link's, say) is refused before the worker encodes it.
        let long = GenerateRequest {
            prompt: "ab".repeat(MAX_PROMPT_BYTES),
            ..whole.clone()
        };
        let e = long.check().unwrap_err();
        assert!(e.detail.starts_with("prompt"), "{}", e.detail);
        let fits = GenerateRequest {
            prompt: "字".repeat(MAX_PROMPT_BYTES / 3),
            ..whole
        };
        assert!(fits.check().is_ok());
    }

    #[test]
    fn split_characters_wait_for_their_rest() {
        let mut s = Utf8Stream::default();
        let heart = "é♥".as_bytes();
        assert_eq!(s.push(&heart[..1]), "");
        assert_eq!(s.push(&heart[1..3]), "é");
        assert_eq!(s.push(&heart[3..]), "♥");
        assert_eq!(s.push(b"ok\xffyes"), "ok\u{FFFD}yes");
        assert_eq!(s.push(b"\xe2"), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }
}

/// One entry of `GET /api/checkpoints` as far as the playground needs it. The list may be a
/// bare array or `{"checkpoints": [...]}`; entries without a URL are skipped.
#[derive(Deserialize)]
struct CheckpointEntry {
    #[serde(alias = "id")]
    name: String,
    #[serde(alias = "model_url")]
    url: Option<String>,
    tokenizer_url: Option<String>,
}

/// The models `GET /api/checkpoints` offers, after the default one (which is never repeated).
pub fn parse_checkpoint_list(json: &str) -> Result<Vec<ModelSource>, String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum List {
        Bare(Vec<CheckpointEntry>),
        Wrapped { checkpoints: Vec<CheckpointEntry> },
    }
    let list = match serde_json::from_str::<List>(json).map_err(|e| e.to_string())? {
        List::Bare(v) | List::Wrapped { checkpoints: v } => v,
    };
    let default = ModelSource::stories260k();
    Ok(list
        .into_iter()
        .filter_map(|c| {
            Some(ModelSource {
                name: c.name,
                model_url: c.url?,
                // Our checkpoints are trained with the 512-token tokenizer unless they say so.
                tokenizer_url: c
                    .tokenizer_url
                    .unwrap_or_else(|| default.tokenizer_url.clone()),
                config_url: None,
                shards: Vec::new(),
                job: None,
            })
        })
        .filter(|m| m.model_url != default.model_url)
        .collect())
}

#[cfg(test)]
mod loader_tests {
    use super::*;

    /// `public/worker.js` prefetches the default model from the same cache and URLs as the
    /// worker's wasm uses, on the hint `public/index.html` reads; if they drift apart, the
    /// prefetch would download for nothing or never.
    #[test]
    fn the_worker_loader_prefetches_what_the_worker_loads() {
        let loader = include_str!("../../public/worker.js");
        let default = ModelSource::stories260k();
        for name in [MODEL_CACHE, &default.model_url, &default.tokenizer_url] {
            assert!(
                loader.contains(&format!("\"{name}\"")),
                "public/worker.js does not name {name:?}"
            );
        }
        let index = include_str!("../../public/index.html");
        assert!(index.contains(&format!("\"{MODEL_CACHED_KEY}\"")));
        assert!(index.contains("new Worker(\"/worker.js#\""));
        // The dataset checker's worker is a binary of its own, with a loader of its own.
        let checker = include_str!("../../public/datacheck.js");
        assert!(!loader.contains("datacheck"));
        assert_eq!(
            crate::dataset_proto::DATASET_WORKER_URL,
            "/datacheck.js",
            "public/datacheck.js is served at /datacheck.js"
        );
        assert!(checker.contains("\"/pkg/datacheck_bg.wasm\""));
        assert!(checker.contains("importScripts(\"/pkg/datacheck.js\")"));
    }
}

#[cfg(test)]
mod checkpoint_tests {
    use super::*;

    #[test]
    fn checkpoint_lists_in_either_shape() {
        let bare = r#"[{"name":"mine","url":"/api/checkpoints/1/file"},{"name":"nourl"}]"#;
        let got = parse_checkpoint_list(bare).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].tokenizer_url, "/models/tok512.bin");
        let wrapped =
            r#"{"checkpoints":[{"id":"x","model_url":"/m.bin","tokenizer_url":"/t.bin"}]}"#;
        let got = parse_checkpoint_list(wrapped).unwrap();
        assert_eq!(got[0].name, "x");
        assert_eq!(got[0].tokenizer_url, "/t.bin");
        assert!(parse_checkpoint_list("{\"error\":1}").is_err());
    }
}

#[cfg(test)]
mod metrics_tests {
    use super::Metrics;

    #[test]
    fn tokens_per_s_is_the_arrival_pace_while_streaming_and_the_workers_once_done() {
        let mut m = Metrics {
            started_ms: 50.0,
            first_token_at_ms: Some(100.0),
            last_token_at_ms: 200.0,
            tokens: 11,
            ..Metrics::default()
        };
        // Ten tokens after the first arrived over 100 ms.
        assert_eq!(m.tokens_per_s(), Some(100.0));
        assert_eq!(m.ttft_ms(), Some(50.0));
        // The worker took 20 ms for them: that is the generation's pace.
        m.generate_ms = Some(20.0);
        assert_eq!(m.tokens_per_s(), Some(500.0));
        // One token has no pace; nor has a generation that took no measurable time.
        m.tokens = 1;
        assert_eq!(m.tokens_per_s(), None);
        m.tokens = 11;
        m.generate_ms = Some(0.0);
        assert_eq!(m.tokens_per_s(), None);
        assert_eq!(Metrics::default().tokens_per_s(), None);
    }
}
