//! Validation: from text (or a `JobSpec` built by a form) to a `ValidSpec` plus every diagnostic.
//!
//! A `ValidSpec` is a spec whose keys, values and combinations are consistent; it is the only
//! input the estimators and the submission path accept. Whether the job *fits* and *finishes*
//! is the estimators' finding, reported by `plan`.

use crate::diag::{Diagnostic, dedup, locate, syntax_first};
use crate::node;
use crate::parse::Reader;
use crate::spec::*;

mod checker;
pub(crate) mod derive;
mod eval;
mod lora;
mod parallel;
mod ranges;
mod resume;
mod rules;
mod text;
mod tuning;
mod valid;
use checker::span_at;
pub use derive::{DEFAULT_MFU_CPU, DEFAULT_MFU_GPU};
use rules::check;
pub use text::{
    DATASET_ID_HEX, DATASET_ID_PREFIX, LABEL_PATTERN, is_clean_text, is_dataset_id, is_job_id,
};
pub(crate) use text::{is_refused, not_a_job_id, one_line};
pub use valid::{ALL_LINEAR, NodeOverride, ValidSpec};

/// Which text format a spec is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

/// Parses and validates a spec written in TOML.
pub fn validate_toml(src: &str) -> (Option<ValidSpec>, Vec<Diagnostic>) {
    validate_text(src, Format::Toml)
}

/// Parses and validates a spec written in JSON (the API's format).
pub fn validate_json(src: &str) -> (Option<ValidSpec>, Vec<Diagnostic>) {
    validate_text(src, Format::Json)
}

/// Parses a spec without the semantic checks: what the form view edits.
pub fn parse_text(src: &str, format: Format) -> (Option<JobSpec>, Vec<Diagnostic>) {
    let (root, mut diags) = match format {
        Format::Toml => node::from_toml(src),
        Format::Json => crate::json_spans::from_json(src),
    };
    let mut reader = Reader::new();
    let spec = reader.spec(&root);
    diags.extend(reader.diags);
    locate(src, &mut diags);
    (spec, diags)
}

pub fn validate_text(src: &str, format: Format) -> (Option<ValidSpec>, Vec<Diagnostic>) {
    let (root, mut diags) = match format {
        Format::Toml => node::from_toml(src),
        Format::Json => crate::json_spans::from_json(src),
    };
    // A JSON syntax error leaves nothing to read; TOML recovers, so keep reading it.
    if format == Format::Json && !diags.is_empty() {
        return (None, diags);
    }
    let mut reader = Reader::new();
    let spec = reader.spec(&root);
    diags.extend(reader.diags);
    let valid = spec.and_then(|spec| {
        let mut checks = Vec::new();
        let v = check(spec, &mut checks, Some(&root));
        diags.extend(checks);
        v
    });
    locate(src, &mut diags);
    dedup(&mut diags);
    syntax_first(&mut diags);
    let valid = valid.filter(|_| !diags.iter().any(Diagnostic::is_error));
    (valid, diags)
}

/// Validates a spec built in code (the form view); diagnostics carry paths but no spans.
pub fn validate_spec(spec: JobSpec) -> (Option<ValidSpec>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let valid = check(spec, &mut diags, None);
    let valid = valid.filter(|_| !diags.iter().any(Diagnostic::is_error));
    (valid, diags)
}

/// Gives diagnostics found after parsing (by the estimators) the span of their key path.
pub(crate) fn attach_spans(src: &str, format: Format, diags: &mut [Diagnostic]) {
    if diags.iter().all(|d| d.span.is_some()) {
        return;
    }
    let (root, _) = match format {
        Format::Toml => node::from_toml(src),
        Format::Json => crate::json_spans::from_json(src),
    };
    for d in diags
        .iter_mut()
        .filter(|d| d.span.is_none() && !d.path.is_empty())
    {
        d.span = span_at(Some(&root), &d.path);
    }
    locate(src, diags);
}
