//! The checker: units from the scanner, read into records, counted, summed into a report.

use crate::count::{Counter, Lengths};
use crate::problem::{BadLine, Problem};
use crate::record::{self, Format, Record};
use crate::scan::{Layout, Scanner, TEXT_PIECE, Unit};
use serde::Serialize;

/// How many bad lines a report lists in full (all are counted).
pub const MAX_LISTED: usize = 100;

/// What a check found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// How the file holds its records; `None` for a file with nothing but whitespace.
    pub layout: Option<Layout>,
    /// The file's format (set by its first usable record); `None` when none was usable.
    pub format: Option<Format>,
    /// Examples one epoch trains on: usable records, or for text the full sequences packed.
    pub examples: u64,
    /// Usable records (for text: documents or lines).
    pub records: u64,
    /// Tokens one epoch trains on: each example cut at `seq_len`, or the packed sequences.
    pub tokens: u64,
    /// Tokens before cutting (for text: the whole stream, the last partial sequence included).
    pub tokens_uncut: u64,
    /// Whether the counts are the tokenizer's own (else an estimate, from the text's length).
    pub exact: bool,
    /// What counted: the tokenizer's place, or (estimating) why there is none.
    pub counted_with: String,
    pub seq_len: u32,
    /// Padded examples longer than `seq_len`, which are cut.
    pub truncated: u64,
    /// Tokens per usable record.
    pub lengths: Lengths,
    /// Bad lines, all counted, the first `MAX_LISTED` listed.
    pub bad_lines: u64,
    pub bad: Vec<BadLine>,
    pub bytes: u64,
}

impl Report {
    /// Whether anything can be trained on.
    pub fn usable(&self) -> bool {
        self.examples > 0
    }
}

/// A check in progress over a file fed chunk by chunk.
pub struct Checker<C: Counter> {
    scanner: Scanner,
    counter: C,
    report: Report,
    first_line: u64,
    /// Tokens of packed text not yet filling a sequence.
    units: Vec<Unit>,
    lengths: Vec<u32>,
}

impl<C: Counter> Checker<C> {
    pub fn new(name: Option<&str>, counter: C, seq_len: u32) -> Self {
        let report = Report {
            layout: None,
            format: None,
            examples: 0,
            records: 0,
            tokens: 0,
            tokens_uncut: 0,
            exact: counter.exact(),
            counted_with: counter.describe(),
            seq_len: seq_len.max(1),
            truncated: 0,
            lengths: Lengths::default(),
            bad_lines: 0,
            bad: Vec::new(),
            bytes: 0,
        };
        Checker {
            scanner: Scanner::new(name),
            counter,
            report,
            first_line: 0,
            units: Vec::new(),
            lengths: Vec::new(),
        }
    }

    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.report.bytes
    }

    /// The counts so far, for progress.
    pub fn partial(&self) -> (u64, u64, u64) {
        (
            self.report.records,
            self.report.tokens_uncut,
            self.report.bad_lines,
        )
    }

    /// The format so far (set by the first usable record).
    pub fn format(&self) -> Option<Format> {
        self.report.format
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.report.bytes += chunk.len() as u64;
        let mut units = std::mem::take(&mut self.units);
        self.scanner.push(chunk, &mut units);
        self.take(&mut units);
        self.units = units;
    }

    pub fn finish(mut self) -> Report {
        let mut units = std::mem::take(&mut self.units);
        self.scanner.finish(&mut units);
        self.take(&mut units);
        let r = &mut self.report;
        r.layout = self.scanner.layout();
        if r.format == Some(Format::Text) {
            let seq = u64::from(r.seq_len);
            r.examples = r.tokens_uncut / seq;
            r.tokens = r.examples * seq;
        }
        r.lengths = Lengths::of(&mut self.lengths);
        self.report
    }

    fn take(&mut self, units: &mut Vec<Unit>) {
        for unit in units.drain(..) {
            match unit {
                Unit::Record { line, bytes } => self.record(line, &bytes),
                Unit::Text { line, bytes } => self.text_line(line, &bytes),
                Unit::Broken { line, fault } => self.bad(line, Problem::ArrayShape { fault }),
            }
        }
    }

    fn bad(&mut self, line: u64, problem: Problem) {
        self.report.bad_lines += 1;
        if self.report.bad.len() < MAX_LISTED {
            self.report.bad.push(BadLine::new(line, problem));
        }
    }

    fn record(&mut self, line: u64, bytes: &[u8]) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return self.bad(line, Problem::InvalidUtf8);
        };
        let value = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => v,
            Err(e) => {
                let detail = json_error(&e);
                let column = e.column();
                return self.bad(line, Problem::InvalidJson { detail, column });
            }
        };
        let (format, rec) = match record::read(value) {
            Ok(x) => x,
            Err(p) => return self.bad(line, p),
        };
        match self.report.format {
            Some(expected) if expected != format => {
                let first_line = self.first_line;
                return self.bad(
                    line,
                    Problem::MixedFormats {
                        found: format,
                        expected,
                        first_line,
                    },
                );
            }
            _ => {}
        }
        if let Err(p) = self.count(&rec) {
            return self.bad(line, p);
        }
        if self.report.format.is_none() {
            self.report.format = Some(format);
            self.first_line = line;
        }
    }

    /// Counts one usable record.
    fn count(&mut self, rec: &Record) -> Result<(), Problem> {
        let r = &mut self.report;
        let seq = r.seq_len;
        let n = match rec {
            Record::Text(text) => {
                let n = self.counter.document(text)?;
                r.tokens_uncut += n;
                n
            }
            _ => {
                let (prompt, full) = self.counter.example(rec)?;
                if prompt >= u64::from(seq) {
                    return Err(Problem::PromptTooLong {
                        tokens: prompt,
                        seq_len: seq,
                    });
                }
                r.examples += 1;
                r.tokens += full.min(u64::from(seq));
                r.tokens_uncut += full;
                r.truncated += u64::from(full > u64::from(seq));
                full
            }
        };
        r.records += 1;
        self.lengths.push(u32::try_from(n).unwrap_or(u32::MAX));
        Ok(())
    }

    /// A plain-text line, tokenized in pieces of at most `TEXT_PIECE` characters.
    fn text_line(&mut self, line: u64, bytes: &[u8]) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return self.bad(line, Problem::InvalidUtf8);
        };
        let mut n = 0;
        for piece in pieces(text) {
            n += self.counter.piece(piece);
        }
        let r = &mut self.report;
        r.format = Some(Format::Text);
        r.tokens_uncut += n;
        r.records += 1;
        self.lengths.push(u32::try_from(n).unwrap_or(u32::MAX));
    }
}

/// `text` cut into pieces of at most `TEXT_PIECE` characters.
pub fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest
            .char_indices()
            .nth(TEXT_PIECE)
            .map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// serde_json's words without its position (the line is the bad line's own).
fn json_error(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
