//! Diagnostics: every problem found in a spec, with a stable code, a place and a bilingual message.

use crate::lang::Lang;
use serde::Serialize;
use std::collections::HashSet;

/// The most diagnostics the reader, and again the checks, keep: a pathological input could make
/// one per byte or per list item, and a few hundred say enough.
pub(crate) const MAX_DIAGNOSTICS: usize = 500;

/// How bad a diagnostic is. Only `Error` stops a spec from being valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A text in both languages the UI speaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    pub en: String,
    #[serde(rename = "zh-CN")]
    pub zh: String,
}

impl Message {
    pub fn new(en: impl Into<String>, zh: impl Into<String>) -> Self {
        Message {
            en: en.into(),
            zh: zh.into(),
        }
    }

    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Zh => &self.zh,
        }
    }
}

/// A byte range in the source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// Stable diagnostic codes. The string form (`as_str`) is part of the public contract: the app,
/// the edge and scripts match on it, so a code is never renamed or reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Code {
    /// The text is not valid TOML or JSON.
    Syntax,
    /// A key that the spec format does not know.
    UnknownKey,
    /// A required key is absent.
    MissingKey,
    /// A value has the wrong type (string where a number is expected, …).
    WrongType,
    /// A value is not one of the allowed words.
    BadValue,
    /// A number is outside its allowed range.
    OutOfRange,
    /// A model id that is not in the catalogue.
    UnknownModel,
    /// A card id that is not in the catalogue.
    UnknownCard,
    /// Keys that contradict each other.
    Conflict,
    /// A free-text value holds characters it may not: a line break, a control or invisible
    /// character, or (in a dataset id or path) a character outside the allowed set.
    BadText,
    /// A duration such as `time_limit` that cannot be read.
    BadDuration,
    /// The job does not fit in the memory of one card.
    DoesNotFit,
    /// The states it offloads do not fit in one node's RAM (or NVMe).
    HostDoesNotFit,
    /// Even at 100% of peak FLOPS the job cannot finish in the stated time.
    PhysicallyImpossible,
    /// At the assumed MFU the job will not finish within its time limit.
    TimeLimitTooShort,
    /// DeepSpeed's batch rule is broken.
    BatchMismatch,
    /// A setting that works but is probably not what was meant.
    Suspicious,
    /// A value was filled in because the spec left it out.
    Defaulted,
    /// A setting of an imported ds_config that the job's own ds_config does not carry.
    NotCarried,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Syntax => "syntax",
            Code::UnknownKey => "unknown-key",
            Code::MissingKey => "missing-key",
            Code::WrongType => "wrong-type",
            Code::BadValue => "bad-value",
            Code::OutOfRange => "out-of-range",
            Code::UnknownModel => "unknown-model",
            Code::UnknownCard => "unknown-card",
            Code::Conflict => "conflict",
            Code::BadText => "bad-text",
            Code::BadDuration => "bad-duration",
            Code::DoesNotFit => "does-not-fit",
            Code::HostDoesNotFit => "host-does-not-fit",
            Code::PhysicallyImpossible => "physically-impossible",
            Code::TimeLimitTooShort => "time-limit-too-short",
            Code::BatchMismatch => "batch-mismatch",
            Code::Suspicious => "suspicious",
            Code::Defaulted => "defaulted",
            Code::NotCarried => "not-carried",
        }
    }
}

/// One problem (or remark) about a spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    /// The dotted key path the problem is about, e.g. `train.micro_batch` (empty for the root).
    pub path: String,
    pub message: Message,
    /// "Did you mean …" and similar hints.
    pub help: Option<Message>,
    /// Byte range in the source, when the source had spans (TOML does, JSON does not).
    pub span: Option<Span>,
    /// 1-based line and column (in characters) of `span.start`; 0 when there is no span.
    pub line: u32,
    pub column: u32,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: Code, path: &str, message: Message) -> Self {
        Diagnostic {
            severity,
            code,
            path: path.to_string(),
            message,
            help: None,
            span: None,
            line: 0,
            column: 0,
        }
    }

    pub fn error(code: Code, path: &str, en: impl Into<String>, zh: impl Into<String>) -> Self {
        Self::new(Severity::Error, code, path, Message::new(en, zh))
    }

    pub fn warning(code: Code, path: &str, en: impl Into<String>, zh: impl Into<String>) -> Self {
        Self::new(Severity::Warning, code, path, Message::new(en, zh))
    }

    pub fn info(code: Code, path: &str, en: impl Into<String>, zh: impl Into<String>) -> Self {
        Self::new(Severity::Info, code, path, Message::new(en, zh))
    }

    pub fn with_span(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    pub fn with_help(mut self, help: Option<Message>) -> Self {
        self.help = help;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The wire form of a diagnostic (what `--json` and the HTTP API emit).
#[derive(Clone, Debug, Serialize)]
pub struct DiagnosticWire {
    pub severity: Severity,
    pub code: &'static str,
    pub path: String,
    /// English message (the `messages` field carries both languages).
    pub message: String,
    pub messages: Message,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<Message>,
    pub line: u32,
    pub column: u32,
}

impl From<&Diagnostic> for DiagnosticWire {
    fn from(d: &Diagnostic) -> Self {
        DiagnosticWire {
            severity: d.severity,
            code: d.code.as_str(),
            path: d.path.clone(),
            message: d.message.en.clone(),
            messages: d.message.clone(),
            help: d.help.clone(),
            line: d.line,
            column: d.column,
        }
    }
}

/// Fills in `line` and `column` from each span and sorts by position, errors first at a tie.
pub(crate) fn locate(src: &str, diags: &mut [Diagnostic]) {
    for d in diags.iter_mut() {
        if let Some(span) = d.span {
            let (line, column) = line_col(src, span.start);
            d.line = line;
            d.column = column;
        }
    }
    diags.sort_by(|a, b| {
        (a.line == 0, a.line, a.column, a.severity).cmp(&(
            b.line == 0,
            b.line,
            b.column,
            b.severity,
        ))
    });
}

/// Drops exact repeats (a check made both while reading and by the rules), keeping order; in
/// one pass, so that many diagnostics cost no more than their number.
pub(crate) fn dedup(diags: &mut Vec<Diagnostic>) {
    let keep: Vec<bool> = {
        let mut seen = HashSet::with_capacity(diags.len());
        diags
            .iter()
            .map(|d| {
                seen.insert((
                    d.code,
                    d.path.as_str(),
                    d.message.en.as_str(),
                    d.line,
                    d.column,
                ))
            })
            .collect()
    };
    let mut keep = keep.into_iter();
    diags.retain(|_| keep.next().unwrap_or(true));
}

/// Adds `d` unless [`MAX_DIAGNOSTICS`] are kept already. Past the cap an error is still kept
/// while none is, so that dropping what is past the cap never makes a refused spec valid.
pub(crate) fn push_capped(diags: &mut Vec<Diagnostic>, d: Diagnostic) {
    if diags.len() < MAX_DIAGNOSTICS || (d.is_error() && !diags.iter().any(Diagnostic::is_error)) {
        diags.push(d);
    }
}

/// With a TOML syntax error, what the checks find may follow from the text the parser skipped
/// (a key it lost is "missing", a value it lost has no place of its own): the syntax errors come
/// first, and of the rest only what has a place of its own on a line without a syntax error, and
/// is not a missing key, stays. Run after [`locate`].
pub(crate) fn syntax_first(diags: &mut Vec<Diagnostic>) {
    let broken: Vec<(u32, usize)> = diags
        .iter()
        .filter(|d| d.code == Code::Syntax)
        .map(|d| (d.line, d.span.map_or(0, |s| s.start)))
        .collect();
    if broken.is_empty() {
        return;
    }
    // Its own place: a span that is not empty (a lost value's is) on a line without a syntax
    // error, holding none (the whole text, another fallback, holds them all).
    let own_place = |d: &Diagnostic| {
        d.span.is_some_and(|s| {
            s.end > s.start
                && broken.iter().all(|&(line, at)| {
                    line != d.line && !(s.start..s.end.max(s.start + 1)).contains(&at)
                })
        })
    };
    diags.retain(|d| d.code == Code::Syntax || (d.code != Code::MissingKey && own_place(d)));
    diags.sort_by_key(|d| d.code != Code::Syntax);
}

/// 1-based line and character column of a byte offset; offsets past the end or inside a
/// character are clamped rather than trusted.
pub fn line_col(src: &str, offset: usize) -> (u32, u32) {
    let mut offset = offset.min(src.len());
    while offset > 0 && !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = src.get(..offset).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

/// The closest candidate to `word`, if one is close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// "Did you mean" for a catalogue id: the ids that hold what was typed, letters and digits only
/// (`4090` → `rtx-4090`, `llama3-8b` → `llama-3-8b`, `A100` → `a100-40g` or `a100-80g`), else the
/// closest one as [`did_you_mean`] finds it.
pub(crate) fn id_hint(word: &str, candidates: &[&str]) -> Option<Message> {
    let plain = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let typed = plain(word.rsplit('/').next().unwrap_or(word));
    let holding: Vec<&str> = if typed.len() >= 3 {
        let exact: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|c| plain(c) == typed || typed.ends_with(&plain(c)))
            .collect();
        if exact.is_empty() {
            candidates
                .iter()
                .copied()
                .filter(|c| plain(c).contains(&typed))
                .collect()
        } else {
            exact
        }
    } else {
        Vec::new()
    };
    match holding.as_slice() {
        [] => hint(did_you_mean(word, candidates.iter().copied())),
        [one] => hint(Some(one)),
        some if some.len() <= 4 => {
            let list = some.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>();
            Some(Message::new(
                format!("did you mean one of {}?", list.join(", ")),
                format!("您是不是想写 {} 之一？", list.join("、")),
            ))
        }
        _ => hint(did_you_mean(word, candidates.iter().copied())),
    }
}

/// A "did you mean" help message.
pub(crate) fn hint(candidate: Option<&str>) -> Option<Message> {
    candidate.map(|c| {
        Message::new(
            format!("did you mean `{c}`?"),
            format!("您是不是想写 `{c}`？"),
        )
    })
}
