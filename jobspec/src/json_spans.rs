//! A small JSON reader that keeps byte spans, so JSON specs get line and column too.
//!
//! It runs only on text serde_json has already accepted, and leaves the decoding of strings and
//! numbers to serde_json; it only finds where each key and value is. Any surprise returns `None`
//! and the caller falls back to span-less nodes.

use crate::diag::Span;
use crate::node::{Key, Node, Val};

const MAX_DEPTH: usize = 128;

struct Cursor<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while let Some(b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == b).then(|| self.pos += 1)
    }

    /// A string token: its decoded text and span (quotes included).
    fn string(&mut self) -> Option<(String, Span)> {
        self.skip_ws();
        let start = self.pos;
        if self.peek()? != b'"' {
            return None;
        }
        self.pos += 1;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    break;
                }
                _ => self.pos += 1,
            }
        }
        let raw = self.src.get(start..self.pos)?;
        let text: String = serde_json::from_str(raw).ok()?;
        Some((
            text,
            Span {
                start,
                end: self.pos,
            },
        ))
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        let start = self.pos;
        let val = match self.peek()? {
            b'"' => Val::Str(self.string()?.0),
            b'{' => Val::Table(self.object(depth)?),
            b'[' => Val::Arr(self.array(depth)?),
            _ => self.scalar(start)?,
        };
        Some(Node {
            val,
            span: Some(Span {
                start,
                end: self.pos,
            }),
        })
    }

    /// `{ "key": value, … }`, the cursor on its `{`.
    fn object(&mut self, depth: usize) -> Option<Vec<(Key, Node)>> {
        self.pos += 1;
        let mut entries = Vec::new();
        self.skip_ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(entries);
        }
        loop {
            let (name, span) = self.string()?;
            self.eat(b':')?;
            let v = self.value(depth + 1)?;
            entries.push((
                Key {
                    name,
                    span: Some(span),
                },
                v,
            ));
            if self.after_item(b'}')? {
                return Some(entries);
            }
        }
    }

    /// `[ value, … ]`, the cursor on its `[`.
    fn array(&mut self, depth: usize) -> Option<Vec<Node>> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(items);
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.after_item(b']')? {
                return Some(items);
            }
        }
    }

    /// After an item of an object or array: a comma (false: more follow) or its `close` (true).
    fn after_item(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Some(false)
            }
            b if b == close => {
                self.pos += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// `true`, `false`, `null` or a number, starting at `start`.
    fn scalar(&mut self, start: usize) -> Option<Val> {
        while let Some(b) = self.peek() {
            if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.pos += 1;
        }
        let raw = self.src.get(start..self.pos)?;
        Some(match raw {
            "true" => Val::Bool(true),
            "false" => Val::Bool(false),
            "null" => Val::Null,
            _ => {
                let n: serde_json::Number = serde_json::from_str(raw).ok()?;
                match n.as_i64() {
                    Some(i) => Val::Int(i),
                    None => Val::Float(n.as_f64().unwrap_or(f64::MAX)),
                }
            }
        })
    }
}

/// Parses JSON, with spans from [`parse`] (syntax errors carry serde_json's line and column).
pub(crate) fn from_json(src: &str) -> (Node, Vec<crate::diag::Diagnostic>) {
    match serde_json::from_str::<serde_json::Value>(src) {
        Ok(v) => (
            parse(src).unwrap_or_else(|| crate::node::from_json_value(&v, 0)),
            Vec::new(),
        ),
        Err(e) => {
            let mut d = crate::diag::Diagnostic::error(
                crate::diag::Code::Syntax,
                "",
                format!("JSON syntax error: {e}"),
                format!("JSON 语法错误：{e}"),
            );
            d.line = u32::try_from(e.line()).unwrap_or(0);
            d.column = u32::try_from(e.column()).unwrap_or(0);
            (
                Node {
                    val: Val::Table(Vec::new()),
                    span: None,
                },
                vec![d],
            )
        }
    }
}

/// The spanned tree of a JSON text, or `None` if anything is unexpected.
pub(crate) fn parse(src: &str) -> Option<Node> {
    let mut c = Cursor {
        src,
        bytes: src.as_bytes(),
        pos: 0,
    };
    let node = c.value(0)?;
    c.skip_ws();
    (c.pos == src.len()).then_some(node)
}

#[cfg(test)]
mod tests {
    #[test]
    fn spans_point_at_values() {
        let src = "{\n  \"a\": [1, \"x\\\"y\"],\n  \"b\": {\"c\": -2.5e3}\n}";
        let node = super::parse(src).unwrap();
        let crate::node::Val::Table(entries) = &node.val else {
            panic!()
        };
        let (k, v) = &entries[1];
        assert_eq!(k.name, "b");
        let span = v.span.unwrap();
        assert_eq!(&src[span.start..span.end], "{\"c\": -2.5e3}");
        assert!(super::parse("[1 2]").is_none());
    }

    /// Every text serde_json accepts is read, whatever its escapes, numbers and nesting.
    #[test]
    fn accepts_what_serde_json_accepts() {
        let cases = [
            r#"{"\u00e9\ud83d\ude00": "\\\"\/\b\f\n\r\t", "k": [[], {}, [{}]]}"#,
            " [ -0 , 1E+2 , 3.5e-7 , 18446744073709551615 , true , false , null ] ",
            r#""模型""#,
            "{}",
            "0",
        ];
        for c in cases {
            assert!(serde_json::from_str::<serde_json::Value>(c).is_ok(), "{c}");
            assert!(super::parse(c).is_some(), "{c}");
        }
    }
}
