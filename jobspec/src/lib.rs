//! The pure core of Onramp: what a valid job is, what it needs and what it costs.
//!
//! No I/O, no async: this crate builds for native targets and for wasm32, and the app, the edge,
//! the runner and the CLI all call it so that they can never disagree.
//!
//! Entry points: [`plan_toml`] / [`plan_json`] (everything at once), [`validate_toml`] /
//! [`validate_json`] / [`validate_spec`] (spec → `ValidSpec` + diagnostics), the estimators in
//! [`estimate`], launch artifacts in [`deepspeed`] and [`launch`], and the share codec in
//! [`share`].

pub mod bench;
pub mod catalog;
pub mod deepspeed;
pub mod diag;
pub mod estimate;
mod json_spans;
pub mod launch;
mod node;
mod parse;
pub mod plan;
pub mod report;
pub mod schema;
pub mod share;
pub mod spec;
pub mod templates;
pub mod validate;

pub use diag::{Code, Diagnostic, DiagnosticWire, Lang, Message, Severity, Span};
pub use estimate::{Estimate, estimate};
pub use plan::{Plan, PlanWire, plan_json, plan_spec, plan_text, plan_text_with, plan_toml};
pub use spec::JobSpec;
pub use templates::{Template, templates};
pub use validate::{
    Format, ValidSpec, parse_text, validate_json, validate_spec, validate_text, validate_toml,
};
