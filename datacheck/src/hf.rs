//! Counting with a Hugging Face tokenizer (`tokenizer.json`) and the model's chat template, as
//! onramp-train renders an example: the conversation through the template, the prompt (all but
//! the last message, with the generation prompt) masked, both tokenized without special tokens.

use crate::count::Counter;
use crate::problem::Problem;
use crate::record::{Message, Record};
use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use tokenizers::Tokenizer;

/// The chat layouts onramp-train uses when a tokenizer brings no template of its own: one file,
/// which data.py reads too.
const TEMPLATES: &str = include_str!("../../trainer/src/onramp_train/chat_templates.json");

/// The layout onramp-train uses for a catalogue model whose tokenizer brings none: the family
/// the catalogue names, else the plain fallback.
pub fn template_for(model_id: Option<&str>) -> String {
    let all: Json = serde_json::from_str(TEMPLATES).unwrap_or(Json::Null);
    let family = model_id
        .and_then(jobspec::catalog::model)
        .map_or("", |m| m.chat_template);
    all["families"][family]
        .as_str()
        .or_else(|| all["fallback"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The files of a Hugging Face tokenizer folder that counting reads.
#[derive(Clone, Debug, Default)]
pub struct TokenizerFiles {
    pub tokenizer_json: Vec<u8>,
    pub tokenizer_config: Option<Vec<u8>>,
    pub special_tokens_map: Option<Vec<u8>>,
    /// `chat_template.jinja`, which newer Transformers save beside the config.
    pub chat_template: Option<String>,
}

/// A tokenizer with its template and special tokens.
pub struct HfCounter {
    tok: Tokenizer,
    env: Environment<'static>,
    specials: BTreeMap<String, Value>,
    eos: Option<String>,
    eos_id: Option<u32>,
    source: String,
}

impl std::fmt::Debug for HfCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfCounter")
            .field("source", &self.source)
            .finish()
    }
}

/// A special token as a config writes it: a string, or an added token's `content`.
fn special(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Object(o) => o.get("content").and_then(Json::as_str).map(String::from),
        _ => None,
    }
}

/// The config's own template: a string, or among named ones the `default`.
fn config_template(config: &Json) -> Option<String> {
    match &config["chat_template"] {
        Json::String(s) => Some(s.clone()),
        Json::Array(list) => list
            .iter()
            .find(|t| t["name"] == "default")
            .and_then(|t| t["template"].as_str())
            .map(String::from),
        _ => None,
    }
}

impl HfCounter {
    /// `fallback` is the template used when the folder brings none (`template_for`).
    pub fn new(files: &TokenizerFiles, fallback: &str, source: String) -> Result<Self, String> {
        let mut tok = Tokenizer::from_bytes(&files.tokenizer_json)
            .map_err(|e| format!("cannot read tokenizer.json: {e}"))?;
        // Transformers turns the file's truncation and padding off unless a call asks.
        tok.with_truncation(None).map_err(|e| e.to_string())?;
        tok.with_padding(None);
        let parse = |b: &Option<Vec<u8>>, what: &str| -> Result<Json, String> {
            match b {
                None => Ok(Json::Null),
                Some(b) => {
                    serde_json::from_slice(b).map_err(|e| format!("cannot read {what}: {e}"))
                }
            }
        };
        let config = parse(&files.tokenizer_config, "tokenizer_config.json")?;
        let map = parse(&files.special_tokens_map, "special_tokens_map.json")?;
        let mut specials = BTreeMap::new();
        for key in ["bos_token", "eos_token", "unk_token", "pad_token"] {
            if let Some(t) = special(&config[key]).or_else(|| special(&map[key])) {
                specials.insert(key.to_string(), Value::from(t));
            }
        }
        // onramp-train gives a tokenizer without padding the unknown or end token as its pad.
        let pad = specials
            .get("unk_token")
            .or(specials.get("eos_token"))
            .cloned();
        if let (false, Some(t)) = (specials.contains_key("pad_token"), pad) {
            specials.insert("pad_token".into(), t);
        }
        let eos = specials.get("eos_token").map(|v| v.to_string());
        let eos_id = eos.as_deref().and_then(|e| tok.token_to_id(e));
        let template = files
            .chat_template
            .clone()
            .or_else(|| config_template(&config))
            .unwrap_or_else(|| fallback.to_string());
        let env = environment(template).map_err(|e| format!("the chat template: {e}"))?;
        Ok(HfCounter {
            tok,
            env,
            specials,
            eos,
            eos_id,
            source,
        })
    }

    /// A tokenizer folder on this machine (`tokenizer.json` and what lies beside it).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_folder(dir: &std::path::Path, model_id: Option<&str>) -> Result<Self, String> {
        let read = |name: &str| std::fs::read(dir.join(name)).ok();
        let files = TokenizerFiles {
            tokenizer_json: std::fs::read(dir.join("tokenizer.json")).map_err(|e| {
                format!("cannot read {}: {e}", dir.join("tokenizer.json").display())
            })?,
            tokenizer_config: read("tokenizer_config.json"),
            special_tokens_map: read("special_tokens_map.json"),
            chat_template: read("chat_template.jinja").and_then(|b| String::from_utf8(b).ok()),
        };
        HfCounter::new(&files, &template_for(model_id), dir.display().to_string())
    }

    fn render(&self, messages: &[Message], generation: bool) -> Result<String, Problem> {
        let mut ctx = self.specials.clone();
        ctx.insert("messages".into(), Value::from_serialize(messages));
        ctx.insert("add_generation_prompt".into(), Value::from(generation));
        self.env
            .get_template("chat")
            .and_then(|t| t.render(ctx))
            .map_err(|e| Problem::Template {
                detail: e.to_string(),
            })
    }

    fn tokens(&self, text: &str) -> u64 {
        self.tok
            .encode_fast(text, false)
            .map_or(0, |e| e.get_ids().len() as u64)
    }

    /// Token ids of a text, as the trainer would see them (for tests and benchmarks).
    pub fn ids(&self, text: &str) -> Vec<u32> {
        self.tok
            .encode_fast(text, false)
            .map(|e| e.get_ids().to_vec())
            .unwrap_or_default()
    }
}

/// A Jinja environment set as Transformers sets its own for chat templates.
fn environment(template: String) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_template_owned("chat", template)?;
    Ok(env)
}

impl Counter for HfCounter {
    fn example(&mut self, rec: &Record) -> Result<(u64, u64), Problem> {
        let (prompt, full) = match rec {
            Record::Chat(msgs) => {
                let full = self.render(msgs, false)?;
                let prompt = self.render(&msgs[..msgs.len().saturating_sub(1)], true)?;
                (prompt, full)
            }
            Record::PromptCompletion { prompt, completion } => {
                let eos = self.eos.as_deref().unwrap_or("");
                (prompt.clone(), format!("{prompt}{completion}{eos}"))
            }
            Record::Text(t) => (String::new(), t.clone()),
        };
        Ok((self.tokens(&prompt), self.tokens(&full)))
    }

    fn document(&mut self, text: &str) -> Result<u64, Problem> {
        Ok(self.tokens(text) + u64::from(self.eos_id.is_some()))
    }

    fn piece(&mut self, text: &str) -> u64 {
        self.tokens(text)
    }

    fn exact(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        self.source.clone()
    }
}
