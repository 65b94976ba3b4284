//! A format-neutral value tree with spans, built from TOML (with spans) or JSON (without).
//!
//! The typed reader in `parse` walks this tree, so TOML and JSON share one set of rules and one
//! set of diagnostics.

use crate::diag::{Code, Diagnostic, Span};
use toml::de::{DeTable, DeValue};

#[derive(Clone, Debug)]
pub(crate) enum Val {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Arr(Vec<Node>),
    Table(Vec<(Key, Node)>),
    /// A TOML datetime: never valid in a spec, kept so the reader can say so.
    Datetime,
    /// JSON `null` (or nesting too deep to read).
    Null,
}

#[derive(Clone, Debug)]
pub(crate) struct Key {
    pub name: String,
    pub span: Option<Span>,
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub val: Val,
    pub span: Option<Span>,
}

impl Node {
    pub fn type_name(&self) -> &'static str {
        match self.val {
            Val::Str(_) => "string",
            Val::Int(_) => "integer",
            Val::Float(_) => "float",
            Val::Bool(_) => "boolean",
            Val::Arr(_) => "array",
            Val::Table(_) => "table",
            Val::Datetime => "datetime",
            Val::Null => "null",
        }
    }
}

fn span_of(r: core::ops::Range<usize>) -> Option<Span> {
    Some(Span {
        start: r.start,
        end: r.end,
    })
}

/// Parses TOML, recovering from syntax errors so that later problems are still reported.
pub(crate) fn from_toml(src: &str) -> (Node, Vec<Diagnostic>) {
    let (table, errors) = DeTable::parse_recoverable(src);
    let diags = errors
        .iter()
        .map(|e| {
            Diagnostic::error(
                Code::Syntax,
                "",
                format!("TOML syntax error: {}", e.message()),
                format!("TOML 语法错误：{}", e.message()),
            )
            .with_span(e.span().and_then(span_of))
        })
        .collect();
    let span = span_of(table.span());
    let node = Node {
        val: table_val(table.get_ref()),
        span,
    };
    (node, diags)
}

fn table_val(t: &DeTable<'_>) -> Val {
    Val::Table(
        t.iter()
            .map(|(k, v)| {
                (
                    Key {
                        name: k.get_ref().to_string(),
                        span: span_of(k.span()),
                    },
                    Node {
                        val: de_val(v.get_ref()),
                        span: span_of(v.span()),
                    },
                )
            })
            .collect(),
    )
}

fn de_val(v: &DeValue<'_>) -> Val {
    match v {
        DeValue::String(s) => Val::Str(s.to_string()),
        DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) => Val::Int(n),
            // Out of i64 range: keep it as a float so the range check reports it.
            Err(_) => Val::Float(i.as_str().parse::<f64>().unwrap_or(f64::MAX)),
        },
        DeValue::Float(f) => Val::Float(
            f.as_str()
                .replace('_', "")
                .parse::<f64>()
                .unwrap_or(f64::NAN),
        ),
        DeValue::Boolean(b) => Val::Bool(*b),
        DeValue::Datetime(_) => Val::Datetime,
        DeValue::Array(a) => Val::Arr(
            a.iter()
                .map(|e| Node {
                    val: de_val(e.get_ref()),
                    span: span_of(e.span()),
                })
                .collect(),
        ),
        DeValue::Table(t) => table_val(t),
    }
}

/// serde_json already bounds nesting (128 levels); the depth guard keeps this walk bounded even
/// if that ever changes.
pub(crate) fn from_json_value(v: &serde_json::Value, depth: usize) -> Node {
    use serde_json::Value as J;
    let val = if depth > 64 {
        Val::Null
    } else {
        match v {
            J::Null => Val::Null,
            J::Bool(b) => Val::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => Val::Float(n.as_f64().unwrap_or(f64::MAX)),
            },
            J::String(s) => Val::Str(s.clone()),
            J::Array(a) => Val::Arr(a.iter().map(|e| from_json_value(e, depth + 1)).collect()),
            J::Object(o) => Val::Table(
                o.iter()
                    .map(|(k, e)| {
                        (
                            Key {
                                name: k.clone(),
                                span: None,
                            },
                            from_json_value(e, depth + 1),
                        )
                    })
                    .collect(),
            ),
        }
    };
    Node { val, span: None }
}
