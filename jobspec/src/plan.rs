//! A plan: validation, every estimate, the card comparison, fixes and artifacts in one value.
//!
//! This is the one call the app (as you type), the CLI (`onramp plan`) and the edge (before it
//! accepts a job) make, so all three see the same findings. `Plan::is_submittable` is the
//! edge's gate.

use crate::deepspeed;
use crate::diag::{Code, Diagnostic, DiagnosticWire, Severity};
use crate::estimate::{self, CardRow, Estimate, Suggestion};
use crate::launch::{self, Artifacts};
use crate::spec::{JobSpec, format_duration};
use crate::validate::{self, Format, ValidSpec};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Every finding, validation and estimates alike, in source order.
    pub diagnostics: Vec<Diagnostic>,
    pub valid: Option<ValidSpec>,
    pub estimate: Option<Estimate>,
    pub cards: Vec<CardRow>,
    pub suggestions: Vec<Suggestion>,
    pub artifacts: Option<Artifacts>,
    /// A spec whole but for its run length (epochs without `data.tokens`) still has a memory
    /// verdict, which does not depend on how long the job runs: this is it. Its time and cost
    /// are not figures of the job.
    pub memory_only: Option<MemoryOnly>,
}

/// The memory of a job whose run length is unknown: the spec with one step in its place
/// (`probe`), and that spec's estimate, of which only the parameters and memory count.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryOnly {
    pub probe: ValidSpec,
    pub estimate: Estimate,
}

impl Plan {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Valid, fits in memory and can finish within its time limit.
    pub fn is_submittable(&self) -> bool {
        self.valid.is_some() && !self.has_errors()
    }
}

pub fn plan_toml(src: &str) -> Plan {
    plan_text(src, Format::Toml)
}

pub fn plan_json(src: &str) -> Plan {
    plan_text(src, Format::Json)
}

pub fn plan_text(src: &str, format: Format) -> Plan {
    plan_text_with(src, format, &[])
}

/// `plan_text` with the deployment's prices (`(card id, fen per card-hour)`).
pub fn plan_text_with(src: &str, format: Format, prices: &[(&str, u64)]) -> Plan {
    let (valid, diags) = validate::validate_text(src, format);
    let valid = valid.map(|v| v.with_prices(prices));
    let short_of_tokens = valid.is_none() && only_tokens_missing(&diags);
    let mut plan = finish(valid, diags);
    if short_of_tokens && let (Some(spec), _) = validate::parse_text(src, format) {
        memory_without_run_length(&mut plan, spec);
    }
    validate::attach_spans(src, format, &mut plan.diagnostics);
    plan
}

pub fn plan_spec(spec: JobSpec) -> Plan {
    let (valid, diags) = validate::validate_spec(spec.clone());
    let short_of_tokens = valid.is_none() && only_tokens_missing(&diags);
    let mut plan = finish(valid, diags);
    if short_of_tokens {
        memory_without_run_length(&mut plan, spec);
    }
    plan
}

/// Whether the one thing wrong is that training by epochs has no `data.tokens`.
fn only_tokens_missing(diags: &[Diagnostic]) -> bool {
    let mut errors = diags.iter().filter(|d| d.is_error()).peekable();
    errors.peek().is_some() && errors.all(|d| d.code == Code::MissingKey && d.path == "data.tokens")
}

/// The memory verdict of a spec short only of `data.tokens`: its memory with one step for the
/// run, and the fit findings that memory gives.
fn memory_without_run_length(plan: &mut Plan, mut spec: JobSpec) {
    spec.train.epochs = None;
    spec.train.steps = Some(1);
    spec.train.warmup = 0;
    let (Some(probe), _) = validate::validate_spec(spec) else {
        return;
    };
    let estimate = estimate::estimate(&probe);
    fit_finding(&probe, &estimate, &mut plan.diagnostics);
    plan.memory_only = Some(MemoryOnly { probe, estimate });
}

/// Runs the estimators on a valid spec and turns their findings into diagnostics.
pub fn finish(valid: Option<ValidSpec>, mut diagnostics: Vec<Diagnostic>) -> Plan {
    let Some(v) = valid else {
        return Plan {
            diagnostics,
            valid: None,
            estimate: None,
            cards: Vec::new(),
            suggestions: Vec::new(),
            artifacts: None,
            memory_only: None,
        };
    };
    let est = estimate::estimate(&v);
    fit_finding(&v, &est, &mut diagnostics);
    physics_findings(&est, &mut diagnostics);
    let cards = estimate::compare_cards(&v);
    let suggestions = estimate::suggest_fixes(&v);
    let artifacts = Some(launch::artifacts(&v));
    Plan {
        diagnostics,
        valid: Some(v),
        estimate: Some(est),
        cards,
        suggestions,
        artifacts,
        memory_only: None,
    }
}

/// An error when the job does not fit in the card's memory, by how much.
fn fit_finding(v: &ValidSpec, est: &Estimate, diagnostics: &mut Vec<Diagnostic>) {
    let m = &est.memory;
    host_fit_finding(v, est, diagnostics);
    if !m.gpu_fits {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        diagnostics.push(Diagnostic::error(
            Code::DoesNotFit,
            "resources.card",
            format!(
                "does not fit: needs {:.1} GiB per card, one {} has {:.1} GiB ({:.1} GiB short)",
                gib(m.per_gpu.total_bytes),
                v.card().display,
                gib(m.card_bytes),
                gib(m.per_gpu.total_bytes.saturating_sub(m.card_bytes))
            ),
            format!(
                "显存不足：每张卡需要 {:.1} GiB，{} 只有 {:.1} GiB（差 {:.1} GiB）",
                gib(m.per_gpu.total_bytes),
                v.card().display,
                gib(m.card_bytes),
                gib(m.per_gpu.total_bytes.saturating_sub(m.card_bytes))
            ),
        ));
    }
}

/// An error when the offloaded states do not fit in one node's RAM or NVMe, by how much.
fn host_fit_finding(v: &ValidSpec, est: &Estimate, diagnostics: &mut Vec<Diagnostic>) {
    let m = &est.memory;
    if m.host_fits {
        return;
    }
    let p = &v.spec().parallel;
    let path = if p.offload_params != crate::spec::Offload::None && p.zero_stage >= 3 {
        "parallel.offload_params"
    } else {
        "parallel.offload_optimizer"
    };
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let (what_en, what_zh, need, have) = if m.cpu_bytes_per_node > m.node_ram_bytes {
        ("RAM", "内存", m.cpu_bytes_per_node, m.node_ram_bytes)
    } else {
        ("NVMe", "NVMe", m.nvme_bytes_per_node, m.node_nvme_bytes)
    };
    let nodes = v.spec().resources.nodes.max(1);
    let card = v.card().display;
    let (need, have, short) = (gib(need), gib(have), gib(need.saturating_sub(have)));
    diagnostics.push(Diagnostic::error(
        Code::HostDoesNotFit,
        path,
        format!(
            "the offloaded states do not fit in host {what_en}: they need {need:.1} GiB per node, a {card} node has {have:.1} GiB ({short:.1} GiB short, over {nodes} node(s)); use more nodes, offload less, or a backend whose nodes have more"
        ),
        format!(
            "卸载的状态放不进主机{what_zh}：每节点需要 {need:.1} GiB，{card} 节点只有 {have:.1} GiB（差 {short:.1} GiB，共 {nodes} 个节点）；请增加节点、少卸载一些，或换用节点更大的后端"
        ),
    ));
}

/// The physics check's findings: an impossible claim or limit, a limit too short for the run, a
/// claimed time that needs an unusual MFU.
fn physics_findings(est: &Estimate, diagnostics: &mut Vec<Diagnostic>) {
    for f in &est.physics {
        let (en, zh) = estimate::time::describe(f);
        let path = if f.what == "time_limit" {
            "resources.time_limit"
        } else {
            "estimate.claimed_time"
        };
        let d = if f.impossible {
            Diagnostic::error(Code::PhysicallyImpossible, path, en, zh)
        } else if f.what == "time_limit" && f.estimated_s > f.stated_s as f64 {
            Diagnostic::warning(
                Code::TimeLimitTooShort,
                path,
                format!(
                    "at {:.0}% MFU the run takes {}, longer than time_limit {}: it will be stopped early",
                    est.time.mfu * 100.0,
                    format_duration(f.estimated_s),
                    format_duration(f.stated_s as f64)
                ),
                format!(
                    "按 {:.0}% MFU 需要 {}，超过 time_limit {}：作业会被提前终止",
                    est.time.mfu * 100.0,
                    crate::spec::format_duration_zh(f.estimated_s),
                    crate::spec::format_duration_zh(f.stated_s as f64)
                ),
            )
        } else if f.what == "claimed_time" {
            Diagnostic::new(
                if f.required_mfu > 0.6 {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                Code::Suspicious,
                path,
                crate::Message::new(en, zh),
            )
        } else {
            continue;
        };
        diagnostics.push(d);
    }
}

/// The JSON form of a plan (`onramp plan --json`, the HTTP API).
#[derive(Clone, Debug, Serialize)]
pub struct PlanWire {
    pub ok: bool,
    pub diagnostics: Vec<DiagnosticWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<JobSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<ParamsWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostWire>,
    pub cards: Vec<CardRow>,
    pub suggestions: Vec<Suggestion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<estimate::Explanation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<ArtifactsWire>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ParamsWire {
    pub total: u64,
    pub trainable: u64,
    pub largest_layer: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemoryWire {
    pub per_gpu: estimate::PerGpu,
    pub card_bytes: u64,
    pub fits: bool,
    pub headroom_bytes: i64,
    pub cpu_bytes_per_node: u64,
    pub nvme_bytes_per_node: u64,
    pub node_ram_bytes: u64,
    pub node_nvme_bytes: u64,
    pub gpu_fits: bool,
    pub host_fits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deepspeed_gpu_bytes: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimeWire {
    pub flops: f64,
    pub seconds: f64,
    pub mfu: f64,
    pub min_seconds: f64,
    pub tokens: u64,
    pub steps: u64,
    pub compute_seconds: f64,
    pub offload_seconds: f64,
    pub cpu_optimizer_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CostWire {
    pub card_hours: f64,
    pub fen: u64,
    pub max_fen: u64,
    pub price_fen_per_hour: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ArtifactsWire {
    pub ds_config: serde_json::Value,
    pub deepspeed: String,
    pub torchrun: String,
    pub sbatch: String,
}

impl From<&Plan> for PlanWire {
    fn from(p: &Plan) -> Self {
        let e = p.estimate.as_ref();
        // Without a run length, the parameters and memory still stand.
        let m = e.or(p.memory_only.as_ref().map(|m| &m.estimate));
        PlanWire {
            ok: !p.has_errors(),
            diagnostics: p.diagnostics.iter().map(DiagnosticWire::from).collect(),
            spec: p.valid.as_ref().map(|v| v.spec().clone()),
            parameters: m.map(|e| ParamsWire {
                total: e.parameters.total,
                trainable: e.parameters.trainable,
                largest_layer: e.parameters.largest_layer,
            }),
            memory: m.map(|e| MemoryWire {
                per_gpu: e.memory.per_gpu,
                card_bytes: e.memory.card_bytes,
                fits: e.memory.fits,
                headroom_bytes: e.memory.headroom_bytes,
                cpu_bytes_per_node: e.memory.cpu_bytes_per_node,
                nvme_bytes_per_node: e.memory.nvme_bytes_per_node,
                node_ram_bytes: e.memory.node_ram_bytes,
                node_nvme_bytes: e.memory.node_nvme_bytes,
                gpu_fits: e.memory.gpu_fits,
                host_fits: e.memory.host_fits,
                deepspeed_gpu_bytes: e.memory.deepspeed_gpu_bytes,
            }),
            time: e.zip(p.valid.as_ref()).map(|(e, v)| TimeWire {
                flops: e.time.flops,
                seconds: finite(e.time.seconds),
                mfu: e.time.mfu,
                min_seconds: finite(e.time.min_seconds),
                tokens: e.time.tokens,
                steps: v.steps(),
                compute_seconds: finite(e.time.compute_seconds),
                offload_seconds: finite(e.time.offload_seconds),
                cpu_optimizer_seconds: finite(e.time.cpu_optimizer_seconds),
            }),
            cost: e.map(|e| CostWire {
                card_hours: finite(e.cost.card_hours),
                fen: e.cost.fen,
                max_fen: e.cost.max_fen,
                price_fen_per_hour: e.cost.price_fen_per_hour,
            }),
            cards: p.cards.clone(),
            suggestions: p.suggestions.clone(),
            explain: e.map(|e| e.explain.clone()),
            artifacts: p.valid.as_ref().map(|v| ArtifactsWire {
                ds_config: if v.card().is_gpu {
                    deepspeed::ds_config(v)
                } else {
                    serde_json::Value::Null
                },
                deepspeed: launch::deepspeed_command(v),
                torchrun: launch::torchrun_command(v),
                sbatch: launch::sbatch_script(v),
            }),
        }
    }
}

/// JSON has no infinity: an unbounded time is written as -1.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { -1.0 }
}
