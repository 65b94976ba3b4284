//! The record formats a dataset may hold, and reading one JSON record into one of them.
//!
//! Each format has a closed set of keys, as Together's `files check` has: an extra key is a bad
//! line, so that a typo (`instuction`) is caught before anything is paid, not trained around.

use crate::problem::{Problem, kind_of};
use serde::Serialize;
use serde_json::{Map, Value};

/// A dataset's format. `Text` is plain text or `{"text": …}` records, packed into sequences;
/// the others are one example per record, padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Chat,
    Alpaca,
    PromptCompletion,
    Text,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Chat => "chat",
            Format::Alpaca => "alpaca",
            Format::PromptCompletion => "prompt_completion",
            Format::Text => "text",
        }
    }

    /// The keys a record of this format takes, as the messages list them.
    pub fn keys(self) -> &'static str {
        match self {
            Format::Chat => "`messages`",
            Format::Alpaca => "`instruction`, `input`, `output`",
            Format::PromptCompletion => "`prompt`, `completion`",
            Format::Text => "`text`",
        }
    }

    /// Whether examples are packed into full sequences (text) or padded one per sequence.
    pub fn packed(self) -> bool {
        self == Format::Text
    }
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

/// One usable record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A conversation; its last message is the assistant's.
    Chat(Vec<Message>),
    /// A prompt and the completion that is learned.
    PromptCompletion { prompt: String, completion: String },
    /// A document (a `text` record, or a piece of a plain-text line).
    Text(String),
}

impl Record {
    /// An alpaca record as the conversation onramp-train renders: the instruction (and its
    /// input, after a blank line) from the user, the output from the assistant.
    fn alpaca(instruction: String, input: String, output: String) -> Record {
        let prompt = if input.trim().is_empty() {
            instruction
        } else {
            format!("{instruction}\n\n{input}")
        };
        Record::Chat(vec![
            Message {
                role: "user".into(),
                content: prompt,
            },
            Message {
                role: "assistant".into(),
                content: output,
            },
        ])
    }
}

/// Which format a record's keys say it is.
pub fn format_of(obj: &Map<String, Value>) -> Option<Format> {
    let has = |k: &str| obj.contains_key(k);
    if has("messages") {
        Some(Format::Chat)
    } else if has("instruction") || has("output") {
        Some(Format::Alpaca)
    } else if has("prompt") || has("completion") {
        Some(Format::PromptCompletion)
    } else if has("text") {
        Some(Format::Text)
    } else {
        None
    }
}

/// Reads one JSON record: its format and the record, or the first thing wrong with it.
pub fn read(value: Value) -> Result<(Format, Record), Problem> {
    let Value::Object(mut obj) = value else {
        return Err(Problem::NotAnObject {
            found: kind_of(&value),
        });
    };
    let format = format_of(&obj).ok_or(Problem::NoFormat)?;
    let allowed: &[&str] = match format {
        Format::Chat => &["messages"],
        Format::Alpaca => &["instruction", "input", "output"],
        Format::PromptCompletion => &["prompt", "completion"],
        Format::Text => &["text"],
    };
    if let Some(key) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(Problem::UnknownKey {
            key: key.clone(),
            format,
        });
    }
    let record = match format {
        Format::Chat => Record::Chat(messages(obj.remove("messages").unwrap_or(Value::Null))?),
        Format::Alpaca => {
            let instruction = text(&mut obj, "instruction", format)?;
            let input = match obj.remove("input") {
                None => String::new(),
                Some(v) => string("input", v)?,
            };
            let output = text(&mut obj, "output", format)?;
            Record::alpaca(instruction, input, output)
        }
        Format::PromptCompletion => Record::PromptCompletion {
            prompt: text(&mut obj, "prompt", format)?,
            completion: text(&mut obj, "completion", format)?,
        },
        Format::Text => Record::Text(text(&mut obj, "text", format)?),
    };
    Ok((format, record))
}

/// A required string key that must hold more than whitespace.
fn text(obj: &mut Map<String, Value>, key: &str, format: Format) -> Result<String, Problem> {
    let v = obj.remove(key).ok_or_else(|| Problem::MissingKey {
        key: key.into(),
        format,
    })?;
    let s = string(key, v)?;
    if s.trim().is_empty() {
        return Err(Problem::EmptyContent { key: key.into() });
    }
    Ok(s)
}

fn string(key: &str, v: Value) -> Result<String, Problem> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(Problem::WrongType {
            key: key.into(),
            expected: "a string",
            found: kind_of(&other),
        }),
    }
}

/// A conversation: an optional system message first, then user and assistant in turn, ending
/// with the assistant's.
fn messages(v: Value) -> Result<Vec<Message>, Problem> {
    let list = match v {
        Value::Array(list) if !list.is_empty() => list,
        Value::Array(_) => {
            return Err(Problem::EmptyContent {
                key: "messages".into(),
            });
        }
        other => {
            return Err(Problem::WrongType {
                key: "messages".into(),
                expected: "a list",
                found: kind_of(&other),
            });
        }
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.into_iter().enumerate() {
        let key = format!("messages[{i}]");
        out.push(message(&key, m, out.last())?);
    }
    let last = out.last().map(|m| m.role.clone()).unwrap_or_default();
    if last != "assistant" {
        return Err(Problem::LastNotAssistant { role: last });
    }
    Ok(out)
}

fn message(key: &str, m: Value, previous: Option<&Message>) -> Result<Message, Problem> {
    let Value::Object(mut obj) = m else {
        return Err(Problem::WrongType {
            key: key.into(),
            expected: "an object",
            found: kind_of(&m),
        });
    };
    if let Some(k) = obj.keys().find(|k| *k != "role" && *k != "content") {
        return Err(Problem::UnknownKey {
            key: format!("{key}.{k}"),
            format: Format::Chat,
        });
    }
    let role_key = format!("{key}.role");
    let role = match obj.remove("role") {
        None => {
            return Err(Problem::MissingKey {
                key: role_key,
                format: Format::Chat,
            });
        }
        Some(v) => string(&role_key, v)?,
    };
    if !matches!(role.as_str(), "system" | "user" | "assistant") {
        return Err(Problem::UnknownRole {
            key: role_key,
            role,
        });
    }
    let expected = match previous.map(|p| p.role.as_str()) {
        None if role == "system" => "system",
        None | Some("system") | Some("assistant") => "user",
        Some(_) => "assistant",
    };
    if role != expected {
        return Err(Problem::RoleOrder {
            key: role_key,
            role,
            expected,
        });
    }
    let content_key = format!("{key}.content");
    let content = match obj.remove("content") {
        None => {
            return Err(Problem::MissingKey {
                key: content_key,
                format: Format::Chat,
            });
        }
        Some(v) => string(&content_key, v)?,
    };
    if content.trim().is_empty() {
        return Err(Problem::EmptyContent { key: content_key });
    }
    Ok(Message { role, content })
}
