//! Validation: from text (or a `JobSpec` built by a form) to a `ValidSpec` plus every diagnostic.
//!
//! A `ValidSpec` is a spec whose keys, values and combinations are consistent; it is the only
//! input the estimators and the submission path accept. Whether the job *fits* and *finishes*
//! is the estimators' finding, reported by `plan`.

use crate::catalog::{self, Arch, Card};
use crate::diag::{Code, Diagnostic, Span, dedup, locate};
use crate::node::{self, Node, Val};
use crate::parse::Reader;
use crate::spec::*;

mod ranges;
mod resume;
mod rules;
mod text;
use rules::check;
pub use text::{is_clean_text, is_job_id};
pub(crate) use text::{is_refused, not_a_job_id, one_line};

/// Default model FLOPs utilisation on GPUs: a typical well-tuned dense-transformer figure
/// (Megatron-LM and PaLM report 0.4–0.55; 0.4 is the conservative end).
pub const DEFAULT_MFU_GPU: f64 = 0.40;
/// Default utilisation of the local runner's CPU cores for candle training.
pub const DEFAULT_MFU_CPU: f64 = 0.20;

/// Module names that may carry LoRA adapters (Hugging Face PEFT names for llama-family models).
pub const LORA_TARGETS: &[&str] = &[
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
    "all-linear",
];

/// A spec that passed validation, with everything the estimators need resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidSpec {
    spec: JobSpec,
    card: &'static Card,
    arch: Arch,
    model_name: String,
    model_max_seq_len: Option<u32>,
    world: u32,
    dp: u32,
    steps: u64,
    train_tokens: u64,
    time_limit_s: u64,
    claimed_s: Option<u64>,
    mfu: f64,
    lora_rank: u32,
    lora_alpha: u32,
    lora_targets: Vec<String>,
    price_overrides: Vec<(&'static str, u64)>,
}

impl ValidSpec {
    pub fn spec(&self) -> &JobSpec {
        &self.spec
    }
    pub fn card(&self) -> &'static Card {
        self.card
    }
    pub fn arch(&self) -> &Arch {
        &self.arch
    }
    pub fn model_name(&self) -> &str {
        &self.model_name
    }
    /// Total cards: cards per node × nodes.
    pub fn world_size(&self) -> u32 {
        self.world
    }
    /// Data-parallel degree: world / (tp × pp × sp).
    pub fn dp(&self) -> u32 {
        self.dp
    }
    /// Sequences per optimizer step: micro-batch × accumulation × data-parallel degree.
    pub fn global_batch(&self) -> u64 {
        u64::from(self.spec.train.micro_batch)
            * u64::from(self.spec.train.grad_accum)
            * u64::from(self.dp)
    }
    pub fn steps(&self) -> u64 {
        self.steps
    }
    /// Tokens processed over the whole run.
    pub fn train_tokens(&self) -> u64 {
        self.train_tokens
    }
    pub fn time_limit_s(&self) -> u64 {
        self.time_limit_s
    }
    pub fn claimed_s(&self) -> Option<u64> {
        self.claimed_s
    }
    pub fn mfu(&self) -> f64 {
        self.mfu
    }
    pub fn lora_rank(&self) -> u32 {
        self.lora_rank
    }
    pub fn lora_alpha(&self) -> u32 {
        self.lora_alpha
    }
    pub fn lora_targets(&self) -> &[String] {
        &self.lora_targets
    }
    /// The same job on another card type, same cluster shape (clamped to what a node holds);
    /// MFU follows the card type unless the spec fixed it.
    pub(crate) fn with_card(&self, card: &'static Card) -> ValidSpec {
        let mut v = self.clone();
        v.card = card;
        v.spec.resources.card = card.id.to_string();
        if v.spec.estimate.mfu.is_none() {
            v.mfu = if card.is_gpu {
                DEFAULT_MFU_GPU
            } else {
                DEFAULT_MFU_CPU
            };
        }
        v
    }

    /// Price per card-hour in fen: the deployment's override for this card, else the catalogue's.
    pub fn price_fen_per_hour(&self) -> u64 {
        self.price_overrides
            .iter()
            .find(|(id, _)| *id == self.card.id)
            .map_or(self.card.price_fen_per_hour, |(_, fen)| *fen)
    }

    /// The same spec priced with a deployment's own prices (`(card id, fen per card-hour)`;
    /// unknown ids are ignored). Every cost figure derived from it uses them.
    pub fn with_prices(mut self, prices: &[(&str, u64)]) -> ValidSpec {
        self.price_overrides = prices
            .iter()
            .filter_map(|(id, fen)| catalog::card(id).map(|c| (c.id, *fen)))
            .collect();
        self
    }

    pub(crate) fn price_overrides(&self) -> &[(&'static str, u64)] {
        &self.price_overrides
    }

    /// The most this job can cost: every card for the whole time limit, in fen.
    pub fn max_cost_fen(&self) -> u64 {
        crate::estimate::cost_fen(self.price_fen_per_hour(), self.world, self.time_limit_s)
    }
}

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
        Format::Json => node::from_json(src),
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
        Format::Json => node::from_json(src),
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
        Format::Json => node::from_json(src),
    };
    for d in diags
        .iter_mut()
        .filter(|d| d.span.is_none() && !d.path.is_empty())
    {
        d.span = span_at(Some(&root), &d.path);
    }
    locate(src, diags);
}

/// Finds the span of a dotted path in the source tree, for semantic diagnostics.
fn span_at(root: Option<&Node>, path: &str) -> Option<Span> {
    let mut node = root?;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let Val::Table(entries) = &node.val else {
            return node.span;
        };
        match entries.iter().rev().find(|(k, _)| k.name == part) {
            Some((_, v)) => node = v,
            None => {
                return node.span.map(|s| Span {
                    start: s.start,
                    end: s.start,
                });
            }
        }
    }
    node.span
}

struct Checker<'a> {
    root: Option<&'a Node>,
    diags: &'a mut Vec<Diagnostic>,
}

impl Checker<'_> {
    fn push(&mut self, d: Diagnostic) {
        let span = span_at(self.root, &d.path);
        self.diags.push(d.with_span(span));
    }
    fn error(&mut self, code: Code, path: &str, en: String, zh: String) {
        self.push(Diagnostic::error(code, path, en, zh));
    }
    fn warn(&mut self, code: Code, path: &str, en: String, zh: String) {
        self.push(Diagnostic::warning(code, path, en, zh));
    }
    fn info(&mut self, code: Code, path: &str, en: String, zh: String) {
        self.push(Diagnostic::info(code, path, en, zh));
    }
}
