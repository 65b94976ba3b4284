//! The spec reference, generated from the JSON Schema: every key with its type, its default, an
//! example and what it means, in English (the schema's own descriptions) and in Chinese (the
//! `key_docs`). `docs/guide.md` carries it; a test in the CLI keeps the guide equal to it.
//!
//! The examples also go into the schema (`examples`), where editors show them, and a test checks
//! that each one is valid for its key.

use crate::Lang;
use serde_json::Value;

pub use crate::key_docs::KEY_DOCS;

/// The tables of the reference in the order a spec is written, with the TOML header each has.
pub(crate) const TABLES: &[(&str, &str)] = &[
    ("", ""),
    ("CustomModel", "[model]"),
    ("DataSpec", "[data]"),
    ("TrainSpec", "[train]"),
    ("ParallelSpec", "[parallel]"),
    ("ResourcesSpec", "[resources]"),
    ("CheckpointSpec", "[checkpoint]"),
    ("OutputSpec", "[output]"),
    ("EvalSpec", "[eval]"),
    ("EstimateSpec", "[estimate]"),
    ("ZeroTuning", "[deepspeed]"),
];

/// An example (TOML value text) as JSON.
pub fn example_json(toml_value: &str) -> Option<Value> {
    let table: toml::Table = toml::from_str(&format!("x = {toml_value}")).ok()?;
    serde_json::to_value(table.get("x")?).ok()
}

/// The Chinese description and the example of one key.
pub fn key_doc(def: &str, key: &str) -> Option<(&'static str, &'static str)> {
    KEY_DOCS
        .iter()
        .find(|(d, k, _, _)| *d == def && *k == key)
        .map(|(_, _, zh, ex)| (*zh, *ex))
}

pub(crate) fn node<'a>(schema: &'a Value, def: &str) -> &'a Value {
    if def.is_empty() {
        schema
    } else {
        &schema["$defs"][def]
    }
}

/// The schema a `$ref` points at, else the node itself.
pub(crate) fn target<'a>(schema: &'a Value, prop: &'a Value) -> &'a Value {
    match prop["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        Some(def) => &schema["$defs"][def],
        None => prop,
    }
}

/// The enum words of a node (`enum`, or `oneOf` of `const`s).
fn words(node: &Value) -> Option<Vec<String>> {
    if let Some(list) = node["enum"].as_array() {
        return Some(
            list.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
        );
    }
    let list = node["oneOf"].as_array()?;
    let mut out = Vec::new();
    for v in list {
        match (&v["const"], v["enum"].as_array()) {
            (Value::String(c), _) => out.push(c.clone()),
            (_, Some(e)) => out.extend(e.iter().filter_map(|w| w.as_str().map(String::from))),
            _ => return None,
        }
    }
    Some(out)
}

/// The words a key takes (its `enum`, or a `oneOf` of constants), through its `$ref`; empty
/// when the key is not a word.
pub fn enum_words(schema: &Value, prop: &Value) -> Vec<String> {
    words(target(schema, prop)).unwrap_or_default()
}

/// The type of a key in words: `integer 1–64`, one of `cosine`, `linear`, …
fn type_words(schema: &Value, prop: &Value, lang: Lang) -> String {
    let t = target(schema, prop);
    if let Some(w) = words(t) {
        let list: Vec<String> = w.iter().map(|w| format!("`{w}`")).collect();
        return match lang {
            Lang::En => format!("one of {}", list.join(", ")),
            Lang::Zh => format!("{} 之一", list.join("、")),
        };
    }
    if let Some(any) = t["anyOf"].as_array() {
        // A branch with only a pattern is the case-insensitive twin of an enum beside it.
        let parts: Vec<String> = any
            .iter()
            .filter(|a| a.get("pattern").is_none())
            .map(|a| type_words(schema, a, lang))
            .collect();
        return parts.join(match lang {
            Lang::En => " or ",
            Lang::Zh => " 或 ",
        });
    }
    let kind = match &t["type"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str())
            .find(|s| *s != "null")
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    };
    let name = match (kind.as_str(), lang) {
        ("integer", Lang::En) => "integer",
        ("integer", Lang::Zh) => "整数",
        ("number", Lang::En) => "number",
        ("number", Lang::Zh) => "数",
        ("string", Lang::En) => "string",
        ("string", Lang::Zh) => "字符串",
        ("boolean", Lang::En) => "boolean",
        ("boolean", Lang::Zh) => "布尔值",
        ("object", Lang::En) => "table",
        ("object", Lang::Zh) => "表",
        ("array", _) => {
            let item = type_words(schema, &t["items"], lang);
            return match lang {
                Lang::En => format!("list of {item}"),
                Lang::Zh => format!("{item}列表"),
            };
        }
        _ => "",
    };
    match (&t["minimum"], &t["exclusiveMinimum"], &t["maximum"], lang) {
        (Value::Number(lo), _, Value::Number(hi), _) => format!("{name} {lo}–{hi}"),
        (_, Value::Number(lo), Value::Number(hi), Lang::En) => {
            format!("{name} over {lo}, up to {hi}")
        }
        (_, Value::Number(lo), Value::Number(hi), Lang::Zh) => {
            format!("{name}，大于 {lo}、至多 {hi}")
        }
        _ => name.to_string(),
    }
}

/// A TOML value as one line of text (for defaults).
fn toml_words(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(toml_words).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(_) => "{ … }".to_string(),
        other => other.to_string(),
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The spec reference as Markdown: one table per TOML table, one row per key.
pub fn reference_markdown(schema: &Value, lang: Lang) -> String {
    let mut out = String::new();
    let (head, required, none) = match lang {
        Lang::En => (
            "| key | type | default | example | meaning |\n|---|---|---|---|---|\n",
            "**required**",
            "not set",
        ),
        Lang::Zh => (
            "| 键 | 类型 | 默认值 | 示例 | 含义 |\n|---|---|---|---|---|\n",
            "**必填**",
            "不设置",
        ),
    };
    for (def, header) in TABLES {
        let n = node(schema, def);
        let Some(props) = n["properties"].as_object() else {
            continue;
        };
        let title = if header.is_empty() {
            match lang {
                Lang::En => "Top level".to_string(),
                Lang::Zh => "顶层".to_string(),
            }
        } else {
            format!("`{header}`")
        };
        let about = if def.is_empty() {
            String::new()
        } else {
            let key = header.trim_matches(['[', ']']);
            match lang {
                Lang::En => schema["properties"][key]["description"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                Lang::Zh => key_doc("", key).map_or(String::new(), |(zh, _)| zh.to_string()),
            }
        };
        out.push_str(&format!("#### {title}\n\n"));
        if !about.is_empty() {
            out.push_str(&format!("{about}\n\n"));
        }
        out.push_str(head);
        let req: Vec<&str> = n["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        for (key, prop) in props {
            if def.is_empty() && !matches!(key.as_str(), "name" | "task" | "backend" | "model") {
                continue; // a table of its own below
            }
            let (zh, example) = key_doc(def, key).unwrap_or(("", ""));
            let meaning = match lang {
                Lang::En => prop["description"]
                    .as_str()
                    .or_else(|| target(schema, prop)["description"].as_str())
                    .unwrap_or(""),
                Lang::Zh => zh,
            };
            let default = if req.contains(&key.as_str()) {
                required.to_string()
            } else {
                match prop.get("default") {
                    Some(v) => format!("`{}`", toml_words(v)),
                    None => none.to_string(),
                }
            };
            out.push_str(&format!(
                "| `{key}` | {} | {default} | `{}` | {} |\n",
                cell(&type_words(schema, prop, lang)),
                cell(example),
                cell(meaning)
            ));
        }
        out.push('\n');
    }
    out.trim_end().to_string() + "\n"
}
