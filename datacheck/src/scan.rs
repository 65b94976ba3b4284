//! Cutting a byte stream into units, chunk by chunk, without holding the file: lines of JSONL
//! or plain text, or the records of one JSON array. onramp-train's data.py cuts the same way.

use serde::Serialize;

/// How a file holds its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// One JSON record per line.
    Jsonl,
    /// One JSON array of records.
    JsonArray,
    /// Plain text, trained on as it is.
    Text,
}

/// The longest piece of a plain-text line tokenized at once, in characters: a file with no line
/// breaks is still read in bounded pieces. data.py's `TEXT_PIECE` is the same.
pub const TEXT_PIECE: usize = 16384;

/// The UTF-8 byte-order mark a file may start with; it is not part of the data.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The layout a file's name says, if it says one.
pub fn layout_by_name(name: &str) -> Option<Layout> {
    match extension(name).as_deref() {
        Some("txt" | "text" | "md") => Some(Layout::Text),
        // JSON: lines or one array, which the first byte tells (`layout_of`).
        _ => None,
    }
}

/// A file name's extension, in lower case (what the layout goes by).
pub fn extension(name: &str) -> Option<String> {
    Some(name.rsplit_once('.')?.1.to_ascii_lowercase())
}

/// The layout of a file named `name` (when known) whose first byte that is not whitespace is
/// `first`: a `.txt`, `.text` or `.md` file is text whatever it starts with; a `.json`,
/// `.jsonl` or `.ndjson` file an array when it starts with `[`, else JSON lines (never text: a
/// first line cut short is a bad line, not the whole file read as prose); any other by its first
/// byte ([`layout_by_head`]). data.py's `layout` is the same.
pub fn layout_of(name: Option<&str>, first: u8) -> Layout {
    if let Some(named) = name.and_then(layout_by_name) {
        return named;
    }
    match (name.and_then(extension).as_deref(), first) {
        (Some("json" | "jsonl" | "ndjson"), b'[') => Layout::JsonArray,
        (Some("json" | "jsonl" | "ndjson"), _) => Layout::Jsonl,
        _ => layout_by_head(first),
    }
}

/// The layout the first byte that is not whitespace says: `[` an array, `{` JSON lines,
/// anything else plain text.
pub fn layout_by_head(first: u8) -> Layout {
    match first {
        b'[' => Layout::JsonArray,
        b'{' => Layout::Jsonl,
        _ => Layout::Text,
    }
}

/// Whitespace as Python's `bytes.strip()` sees it.
pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// One unit cut from the stream: its bytes and the 1-based line it starts on.
#[derive(Debug, PartialEq, Eq)]
pub enum Unit {
    /// A line (JSONL, without its `\n` and a trailing `\r`) or a record of the array.
    Record { line: u64, bytes: Vec<u8> },
    /// A plain-text line with its `\n`.
    Text { line: u64, bytes: Vec<u8> },
    /// The array's brackets or commas are wrong at this line.
    Broken { line: u64, fault: Fault },
}

/// What is wrong with a JSON array's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The file ends before the closing `]`.
    Unclosed,
    /// Something other than whitespace after the closing `]`.
    TextAfter,
    /// A `,` with no record before it.
    NothingBefore,
    /// A `,` with no record after it (a trailing comma).
    NothingAfter,
}

/// The state of a JSON array's scan.
#[derive(Debug, Default)]
struct ArrayScan {
    opened: bool,
    closed: bool,
    /// Nesting inside the current record.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// A record has started since the last separator.
    started: bool,
    start_line: u64,
    /// The last thing at the array's level was a `,`.
    after_comma: bool,
    trailing_reported: bool,
}

/// Cuts bytes into units as they arrive.
#[derive(Debug)]
pub struct Scanner {
    layout: Option<Layout>,
    /// The file's name, which may fix the layout ([`layout_of`]).
    name: Option<String>,
    /// Bytes before the layout is known (leading whitespace), or of the unit being cut.
    buf: Vec<u8>,
    line: u64,
    unit_line: u64,
    array: ArrayScan,
    at_start: bool,
}

impl Scanner {
    /// `name`, when known, may fix the layout (a `.txt` file is text whatever it starts with).
    pub fn new(name: Option<&str>) -> Self {
        Scanner {
            layout: None,
            name: name.map(str::to_string),
            buf: Vec::new(),
            line: 1,
            unit_line: 1,
            array: ArrayScan::default(),
            at_start: true,
        }
    }

    pub fn layout(&self) -> Option<Layout> {
        self.layout
    }

    /// Feeds a chunk; the units it completes go to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Unit>) {
        if self.at_start {
            // The mark may arrive split over chunks: keep the first bytes until three are seen.
            self.buf.extend_from_slice(chunk);
            if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                return;
            }
            self.at_start = false;
            let mut head = std::mem::take(&mut self.buf);
            if head.starts_with(BOM) {
                head.drain(..BOM.len());
            }
            return self.push(&head, out);
        }
        if self.layout.is_none() {
            let skip = chunk.iter().take_while(|b| is_space(**b)).count();
            self.buf.extend_from_slice(&chunk[..skip]);
            chunk = &chunk[skip..];
            let Some(&first) = chunk.first() else { return };
            let layout = layout_of(self.name.as_deref(), first);
            self.layout = Some(layout);
            let lead = std::mem::take(&mut self.buf);
            if layout == Layout::Text {
                // Leading blank lines are part of the text.
                self.push_lines(&lead, out);
            } else {
                self.line += lead.iter().filter(|b| **b == b'\n').count() as u64;
                self.unit_line = self.line;
            }
        }
        match self.layout {
            Some(Layout::JsonArray) => self.push_array(chunk, out),
            Some(_) => self.push_lines(chunk, out),
            None => {}
        }
    }

    /// Ends the stream: the last unit, and what an unclosed array lacks.
    pub fn finish(&mut self, out: &mut Vec<Unit>) {
        if self.at_start {
            self.at_start = false;
            let head = std::mem::take(&mut self.buf);
            self.push(&head, out);
        }
        match self.layout {
            Some(Layout::JsonArray) => {
                if self.array.started {
                    self.emit_record(out);
                }
                if !self.array.closed {
                    out.push(Unit::Broken {
                        line: self.line,
                        fault: Fault::Unclosed,
                    });
                }
            }
            Some(layout) if !self.buf.is_empty() => {
                let bytes = std::mem::take(&mut self.buf);
                let unit = self.line_unit(layout, bytes);
                // A last line of only spaces, with no line break after it, is blank as any other.
                if !matches!(&unit, Unit::Record { bytes, .. } if bytes.iter().all(|b| is_space(*b)))
                {
                    out.push(unit);
                }
            }
            _ => {}
        }
    }

    fn line_unit(&self, layout: Layout, mut bytes: Vec<u8>) -> Unit {
        let line = self.unit_line;
        if layout == Layout::Text {
            return Unit::Text { line, bytes };
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        Unit::Record { line, bytes }
    }

    fn push_lines(&mut self, chunk: &[u8], out: &mut Vec<Unit>) {
        let layout = self.layout.unwrap_or(Layout::Jsonl);
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            self.buf.extend_from_slice(&rest[..=i]);
            rest = &rest[i + 1..];
            let bytes = std::mem::take(&mut self.buf);
            let unit = self.line_unit(layout, bytes);
            self.line += 1;
            self.unit_line = self.line;
            let blank =
                matches!(&unit, Unit::Record { bytes, .. } if bytes.iter().all(|b| is_space(*b)));
            if !blank {
                out.push(unit);
            }
        }
        self.buf.extend_from_slice(rest);
    }

    fn push_array(&mut self, chunk: &[u8], out: &mut Vec<Unit>) {
        for &b in chunk {
            self.array_byte(b, out);
            if b == b'\n' {
                self.line += 1;
            }
        }
    }

    fn array_byte(&mut self, b: u8, out: &mut Vec<Unit>) {
        let a = &mut self.array;
        if a.closed {
            if !is_space(b) && !a.trailing_reported {
                a.trailing_reported = true;
                out.push(Unit::Broken {
                    line: self.line,
                    fault: Fault::TextAfter,
                });
            }
            return;
        }
        if !a.opened {
            // The first byte that is not whitespace is the `[` that chose this layout.
            a.opened = b == b'[';
            return;
        }
        if a.in_string {
            self.buf.push(b);
            match (a.escaped, b) {
                (true, _) => a.escaped = false,
                (false, b'\\') => a.escaped = true,
                (false, b'"') => a.in_string = false,
                _ => {}
            }
            return;
        }
        match b {
            b',' | b']' if a.depth == 0 => {
                let close = b == b']';
                if a.started {
                    self.emit_record(out);
                } else if !close || self.array.after_comma {
                    out.push(Unit::Broken {
                        line: self.line,
                        fault: if close {
                            Fault::NothingAfter
                        } else {
                            Fault::NothingBefore
                        },
                    });
                }
                self.array.after_comma = !close;
                self.array.closed = close;
            }
            _ if !a.started && is_space(b) => {}
            _ => {
                if !a.started {
                    a.started = true;
                    a.after_comma = false;
                    a.start_line = self.line;
                }
                match b {
                    b'"' => a.in_string = true,
                    b'{' | b'[' => a.depth += 1,
                    b'}' | b']' => a.depth = a.depth.saturating_sub(1),
                    _ => {}
                }
                self.buf.push(b);
            }
        }
    }

    fn emit_record(&mut self, out: &mut Vec<Unit>) {
        let bytes = std::mem::take(&mut self.buf);
        out.push(Unit::Record {
            line: self.array.start_line,
            bytes,
        });
        self.array.started = false;
        self.array.depth = 0;
        self.array.in_string = false;
        self.array.escaped = false;
    }
}
