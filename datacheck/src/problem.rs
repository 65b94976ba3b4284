//! What can be wrong with one line (or one record of a JSON array) of a dataset, with a stable
//! code and a message in both languages, as spec diagnostics have.

use crate::record::Format;
use crate::scan::Fault;
use jobspec::Lang;
use jobspec::diag::Message;
use serde::Serialize;

/// One kind of bad line. The code (`code()`) is part of the contract: the app, the edge and
/// scripts match on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// The line's bytes are not UTF-8.
    InvalidUtf8,
    /// Not JSON at all (or a JSON array left unclosed); `detail` is the parser's words.
    InvalidJson { detail: String, column: usize },
    /// The JSON array's brackets or commas are wrong.
    ArrayShape { fault: Fault },
    /// A record that is not a JSON object.
    NotAnObject { found: &'static str },
    /// A key of the right name holding the wrong kind of value.
    WrongType {
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    /// A key no format of this record knows.
    UnknownKey { key: String, format: Format },
    /// A key the record's format needs.
    MissingKey { key: String, format: Format },
    /// None of the keys that tell the formats apart.
    NoFormat,
    /// A message role other than system, user and assistant.
    UnknownRole { key: String, role: String },
    /// A role where the conversation expects another.
    RoleOrder {
        key: String,
        role: String,
        expected: &'static str,
    },
    /// The conversation does not end with the assistant's answer, the part that is learned.
    LastNotAssistant { role: String },
    /// A text that is empty or only whitespace.
    EmptyContent { key: String },
    /// A record of another format than the file's first.
    MixedFormats {
        found: Format,
        expected: Format,
        first_line: u64,
    },
    /// The prompt alone fills the sequence, so nothing of the answer would be learned.
    PromptTooLong { tokens: u64, seq_len: u32 },
    /// The chat template refused the conversation (its own `raise_exception`).
    Template { detail: String },
}

impl Problem {
    pub fn code(&self) -> &'static str {
        match self {
            Problem::InvalidUtf8 => "invalid_utf8",
            Problem::InvalidJson { .. } => "invalid_json",
            Problem::ArrayShape { .. } => "array_shape",
            Problem::NotAnObject { .. } => "not_an_object",
            Problem::WrongType { .. } => "wrong_type",
            Problem::UnknownKey { .. } => "unknown_key",
            Problem::MissingKey { .. } => "missing_key",
            Problem::NoFormat => "no_format",
            Problem::UnknownRole { .. } => "unknown_role",
            Problem::RoleOrder { .. } => "role_order",
            Problem::LastNotAssistant { .. } => "last_not_assistant",
            Problem::EmptyContent { .. } => "empty_content",
            Problem::MixedFormats { .. } => "mixed_formats",
            Problem::PromptTooLong { .. } => "prompt_too_long",
            Problem::Template { .. } => "template",
        }
    }

    pub fn text(&self, lang: Lang) -> String {
        self.message().get(lang).to_string()
    }

    /// What is wrong, in both languages.
    pub fn message(&self) -> Message {
        match self {
            Problem::InvalidUtf8 => Message::new(
                "the line is not valid UTF-8 text; save the file as UTF-8",
                "该行不是有效的 UTF-8 文本；请将文件另存为 UTF-8",
            ),
            Problem::InvalidJson { detail, column } => Message::new(
                format!("not valid JSON: {detail} (column {column})"),
                format!("不是有效的 JSON（第 {column} 列出错）"),
            ),
            Problem::ArrayShape { fault } => match fault {
                Fault::Unclosed => Message::new(
                    "the JSON array is not closed: the file ends before its `]`",
                    "JSON 数组没有闭合：文件在 `]` 之前就结束了",
                ),
                Fault::TextAfter => Message::new(
                    "there is more after the JSON array's closing `]`; a file holds one array",
                    "JSON 数组的 `]` 之后还有内容；一个文件只能有一个数组",
                ),
                Fault::NothingBefore => {
                    Message::new("a `,` with no record before it", "`,` 之前没有记录")
                }
                Fault::NothingAfter => Message::new(
                    "a `,` with no record after it (JSON allows no trailing comma)",
                    "`,` 之后没有记录（JSON 不允许末尾逗号）",
                ),
            },
            Problem::NotAnObject { found } => Message::new(
                format!("a record must be a JSON object, this is {found}"),
                format!("每条记录须为 JSON 对象，这里是 {}", zh_kind(found)),
            ),
            Problem::WrongType {
                key,
                expected,
                found,
            } => Message::new(
                format!("`{key}` must be {expected}, it is {found}"),
                format!(
                    "`{key}` 须为 {}，实际为 {}",
                    zh_kind(expected),
                    zh_kind(found)
                ),
            ),
            Problem::UnknownKey { key, format } => Message::new(
                format!(
                    "unknown key `{key}` in a record of the {} format (it takes {})",
                    format.name(),
                    format.keys()
                ),
                format!(
                    "{} 记录中有未知的键 `{key}`（可用的键：{}）",
                    format.name(),
                    format.keys()
                ),
            ),
            Problem::MissingKey { key, format } => Message::new(
                format!("a record of the {} format needs `{key}`", format.name()),
                format!("{} 记录缺少 `{key}`", format.name()),
            ),
            Problem::NoFormat => Message::new(
                "no known format: a record needs `messages` (chat), `instruction` and `output` \
                 (alpaca), `prompt` and `completion`, or `text`",
                "无法识别格式：记录须含 `messages`（对话）、`instruction` 与 `output`（alpaca）、\
                 `prompt` 与 `completion`，或 `text`",
            ),
            _ => self.message_of_content(),
        }
    }
}

impl Problem {
    /// The kinds about a record's content: its conversation, its format, its length.
    fn message_of_content(&self) -> Message {
        match self {
            Problem::UnknownRole { key, role } => Message::new(
                format!("`{key}` is `{role}`; a role is system, user or assistant"),
                format!("`{key}` 为 `{role}`；角色只能是 system、user 或 assistant"),
            ),
            Problem::RoleOrder {
                key,
                role,
                expected,
            } => Message::new(
                format!(
                    "`{key}` is `{role}` where {expected} comes next (an optional system \
                     message first, then user and assistant in turn)"
                ),
                format!(
                    "`{key}` 为 `{role}`，此处应为 {expected}（可先有一条 system 消息，\
                     之后 user 与 assistant 轮流）"
                ),
            ),
            Problem::LastNotAssistant { role } => Message::new(
                format!(
                    "the last message is the {role}'s; it must be the assistant's, the answer \
                     that is learned"
                ),
                format!("最后一条消息来自 {role}；须为 assistant 的回答，训练学的正是它"),
            ),
            Problem::EmptyContent { key } => {
                Message::new(format!("`{key}` is empty"), format!("`{key}` 为空"))
            }
            Problem::MixedFormats {
                found,
                expected,
                first_line,
            } => Message::new(
                format!(
                    "a record of the {} format in a file of the {} format (set by line \
                     {first_line}); one file holds one format",
                    found.name(),
                    expected.name()
                ),
                format!(
                    "{} 格式的文件中出现 {} 记录（文件格式由第 {first_line} 行确定）；\
                     一个文件只能有一种格式",
                    expected.name(),
                    found.name()
                ),
            ),
            Problem::PromptTooLong { tokens, seq_len } => Message::new(
                format!(
                    "the prompt alone is {tokens} tokens and data.seq_len is {seq_len}, so \
                     nothing of the answer would be learned; shorten it or raise seq_len"
                ),
                format!(
                    "仅提示部分就有 {tokens} 个 token，而 data.seq_len 为 {seq_len}，\
                     回答部分将完全学不到；请缩短提示或调大 seq_len"
                ),
            ),
            Problem::Template { detail } => Message::new(
                format!("the model's chat template refuses this conversation: {detail}"),
                format!("模型的对话模板拒绝了这段对话：{detail}"),
            ),
            _ => Message::new(self.code(), self.code()),
        }
    }
}

/// A JSON kind's name in Chinese (`a string` → `字符串`).
fn zh_kind(en: &str) -> &'static str {
    match en {
        "a string" => "字符串",
        "a number" => "数字",
        "a boolean" => "布尔值",
        "null" => "null",
        "a list" | "a non-empty list" => "列表",
        "an object" => "对象",
        _ => "其他值",
    }
}

/// The English name of a JSON value's kind, as the messages say it.
pub fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A bad line: where, and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BadLine {
    /// 1-based line of the file where the line or record starts.
    pub line: u64,
    pub code: &'static str,
    pub problem: Problem,
    pub en: String,
    #[serde(rename = "zh-CN")]
    pub zh: String,
}

impl BadLine {
    pub fn new(line: u64, problem: Problem) -> Self {
        let m = problem.message();
        BadLine {
            line,
            code: problem.code(),
            en: m.en,
            zh: m.zh,
            problem,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of bad line: the match has no catch-all, so a new kind fails to compile until
    /// it is added to [`every_kind`].
    fn listed(p: &Problem) -> bool {
        match p {
            Problem::InvalidUtf8
            | Problem::InvalidJson { .. }
            | Problem::ArrayShape { .. }
            | Problem::NotAnObject { .. }
            | Problem::WrongType { .. }
            | Problem::UnknownKey { .. }
            | Problem::MissingKey { .. }
            | Problem::NoFormat
            | Problem::UnknownRole { .. }
            | Problem::RoleOrder { .. }
            | Problem::LastNotAssistant { .. }
            | Problem::EmptyContent { .. }
            | Problem::MixedFormats { .. }
            | Problem::PromptTooLong { .. }
            | Problem::Template { .. } => true,
        }
    }

    /// One of every kind of bad line, each with its own words in English and in Chinese.
    fn every_kind() -> Vec<Problem> {
        let all = vec![
            Problem::InvalidUtf8,
            Problem::InvalidJson {
                detail: "EOF while parsing".into(),
                column: 7,
            },
            Problem::ArrayShape {
                fault: Fault::Unclosed,
            },
            Problem::ArrayShape {
                fault: Fault::TextAfter,
            },
            Problem::ArrayShape {
                fault: Fault::NothingBefore,
            },
            Problem::ArrayShape {
                fault: Fault::NothingAfter,
            },
            Problem::NotAnObject { found: "a list" },
            Problem::WrongType {
                key: "output".into(),
                expected: "a string",
                found: "a number",
            },
            Problem::UnknownKey {
                key: "extra".into(),
                format: Format::Alpaca,
            },
            Problem::MissingKey {
                key: "completion".into(),
                format: Format::PromptCompletion,
            },
            Problem::NoFormat,
            Problem::UnknownRole {
                key: "messages[1].role".into(),
                role: "robot".into(),
            },
            Problem::RoleOrder {
                key: "messages[2].role".into(),
                role: "user".into(),
                expected: "assistant",
            },
            Problem::LastNotAssistant {
                role: "user".into(),
            },
            Problem::EmptyContent {
                key: "messages[0].content".into(),
            },
            Problem::MixedFormats {
                found: Format::Chat,
                expected: Format::Text,
                first_line: 1,
            },
            Problem::PromptTooLong {
                tokens: 900,
                seq_len: 512,
            },
            Problem::Template {
                detail: "Conversation roles must alternate".into(),
            },
        ];
        assert!(all.iter().all(listed));
        all
    }

    #[test]
    fn every_kind_of_bad_line_says_what_is_wrong_in_both_languages() {
        let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let kinds = every_kind();
        let codes: std::collections::BTreeSet<&str> = kinds.iter().map(Problem::code).collect();
        assert_eq!(codes.len(), 15, "{codes:?}");
        for p in &kinds {
            let (en, zh) = (p.text(Lang::En), p.text(Lang::Zh));
            assert!(en.len() > 10 && !cjk(&en), "{p:?}: {en}");
            assert!(cjk(&zh) && zh != en, "{p:?}: {zh}");
            assert_ne!(en, p.code(), "{p:?} has words of its own");
        }
    }
}
