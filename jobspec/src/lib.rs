//! The pure core of Onramp: what a valid job is, what it needs and what it costs.
//!
//! No I/O, no async: this crate builds for native targets and for wasm32, and the app, the edge,
//! the runner and the CLI all call it so that they can never disagree.
//!
//! Entry points:
//! - [`plan_toml`] / [`plan_json`] / [`plan_spec`] / [`plan_text_with`]: everything at once
//!   (diagnostics, estimate, card comparison, fixes, artifacts); [`Plan::is_submittable`] is the
//!   edge's gate and [`PlanWire`] its JSON form.
//! - [`validate_toml`] / [`validate_json`] / [`validate_spec`]: spec → `(Option<ValidSpec>,
//!   Vec<Diagnostic>)`, every problem with a stable code, line/column and zh-CN + en text.
//! - [`estimate()`], [`estimate::compare_cards`], [`estimate::suggest_fixes`] and
//!   [`patch::apply_patch`] / [`patch::apply_patch_toml`]: only on a `ValidSpec`.
//! - [`deepspeed`] (ds_config export and import), [`launch`] (commands, sbatch), [`share`]
//!   (URL-fragment codec), [`schema`] (JSON Schema), [`templates()`], [`report`] (terminal
//!   text) and [`bench`](mod@bench) (the `cargo xtask bench` hook).
//!
//! Deliberately absent: HTTP, files, clocks, randomness. Money is integer fen.

pub mod bench;
pub mod catalog;
pub mod deepspeed;
pub mod diag;
pub mod duration;
pub mod estimate;
pub mod eval_spec;
mod json_spans;
mod key_docs;
pub mod lang;
pub mod launch;
pub mod money;
mod node;
mod parse;
pub mod patch;
pub mod plan;
pub mod report;
pub mod schema;
pub mod schema_doc;
pub mod share;
pub mod spec;
pub mod spec_diff;
pub mod templates;
pub mod trainer;
pub mod validate;
pub mod zero_tuning;

pub use diag::{Code, Diagnostic, DiagnosticWire, Message, Severity, Span};
pub use estimate::{Estimate, estimate};
pub use lang::Lang;
pub use money::yuan;
pub use plan::{Plan, PlanWire, plan_json, plan_spec, plan_text, plan_text_with, plan_toml};
pub use spec::JobSpec;
pub use templates::{Template, templates};
pub use validate::{
    Format, NodeOverride, ValidSpec, parse_text, validate_json, validate_spec, validate_text,
    validate_toml,
};
