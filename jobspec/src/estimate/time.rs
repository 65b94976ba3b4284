//! Training time from FLOPs over cards × peak × MFU, cost in fen, and the physics check.

use super::params::ParamCount;
use crate::spec::{Recompute, format_duration};
use crate::validate::ValidSpec;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TimeEstimate {
    /// Model FLOPs of the whole run: (6·N, or 4·N with frozen base) + attention, per token.
    pub flops: f64,
    /// Wall time at the assumed MFU, including recomputation.
    pub seconds: f64,
    pub mfu: f64,
    /// The physical lower bound: the model FLOPs at 100% of peak on every card.
    pub min_seconds: f64,
    pub tokens: u64,
    /// Aggregate peak of all cards at the training precision, FLOPS.
    pub peak_flops: f64,
    /// Extra compute factor from recomputation (4/3 for full, 1 otherwise).
    pub recompute_factor: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostEstimate {
    pub card_hours: f64,
    /// Estimated cost of the run in fen (rounded up).
    pub fen: u64,
    /// The most the job can cost (every card for the whole time limit): the hold the edge places.
    pub max_fen: u64,
    pub price_fen_per_hour: u64,
}

/// FLOPs per token of one training step.
///
/// Dense part: 6·N (Kaplan et al. 2020, "Scaling Laws", §2.1: 2N forward + 4N backward); with a
/// frozen base (LoRA) the weight gradients of the base are skipped, leaving 4·N.
/// Attention part: 12·L·h·s (PaLM, Chowdhery et al. 2022, Appendix B: 6·L·H·Q·T·2 for Q·T = h),
/// the score and value products, forward and backward, without the causal discount.
pub fn flops_per_token(v: &ValidSpec, pc: &ParamCount) -> (f64, f64) {
    let a = v.arch();
    let dense_factor = if v.spec().task.is_adapter() { 4.0 } else { 6.0 };
    let dense = dense_factor * pc.total as f64;
    let attention =
        12.0 * f64::from(a.layers) * f64::from(a.hidden) * f64::from(v.spec().data.seq_len);
    (dense, attention)
}

pub fn estimate(v: &ValidSpec, pc: &ParamCount) -> TimeEstimate {
    let (dense, attention) = flops_per_token(v, pc);
    let tokens = v.train_tokens();
    let flops = (dense + attention) * tokens as f64;
    let peak = f64::from(v.world_size()) * v.card().peak_flops(v.spec().train.precision);
    // Full recomputation runs the forward pass twice: 4 passes instead of 3 (Korthikanti et
    // al. 2022, §5). Selective recomputation redoes only attention's cheap parts.
    let recompute_factor = match v.spec().train.grad_checkpointing {
        Recompute::Full => 4.0 / 3.0,
        Recompute::Selective | Recompute::None => 1.0,
    };
    let mfu = v.mfu();
    let (seconds, min_seconds) = if peak > 0.0 && mfu > 0.0 {
        (flops * recompute_factor / (peak * mfu), flops / peak)
    } else {
        (f64::INFINITY, f64::INFINITY)
    };
    TimeEstimate {
        flops,
        seconds,
        mfu,
        min_seconds,
        tokens,
        peak_flops: peak,
        recompute_factor,
    }
}

pub use crate::money::cost_fen;

pub fn cost(v: &ValidSpec, t: &TimeEstimate) -> CostEstimate {
    let secs = if t.seconds.is_finite() {
        t.seconds.ceil().min(1e15) as u64
    } else {
        u64::MAX / 4
    };
    CostEstimate {
        card_hours: f64::from(v.world_size()) * t.seconds / 3600.0,
        fen: cost_fen(v.price_fen_per_hour(), v.world_size(), secs),
        max_fen: v.max_cost_fen(),
        price_fen_per_hour: v.price_fen_per_hour(),
    }
}

/// One finding of the physics check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhysicsFinding {
    /// `"time_limit"` or `"claimed_time"`.
    pub what: &'static str,
    pub stated_s: u64,
    pub min_s: f64,
    pub estimated_s: f64,
    /// The MFU the stated time would need (above 1.0 is impossible).
    pub required_mfu: f64,
    pub impossible: bool,
}

/// Compares the time limit and any claimed time with the FLOPs bound.
pub fn physics(v: &ValidSpec, t: &TimeEstimate) -> Vec<PhysicsFinding> {
    let mut out = Vec::new();
    let stated = [
        ("time_limit", Some(v.time_limit_s())),
        ("claimed_time", v.claimed_s()),
    ];
    for (what, s) in stated {
        let Some(s) = s.filter(|s| *s > 0) else {
            continue;
        };
        let required_mfu = if t.peak_flops > 0.0 {
            t.flops * t.recompute_factor / (t.peak_flops * s as f64)
        } else {
            f64::INFINITY
        };
        out.push(PhysicsFinding {
            what,
            stated_s: s,
            min_s: t.min_seconds,
            estimated_s: t.seconds,
            required_mfu,
            impossible: t.min_seconds > s as f64,
        });
    }
    out
}

/// Human sentence for a finding, in both languages.
pub fn describe(f: &PhysicsFinding) -> (String, String) {
    let stated = format_duration(f.stated_s as f64);
    let min = format_duration(f.min_s);
    let est = format_duration(f.estimated_s);
    let days = f.min_s / 86_400.0;
    let label_zh = if f.what == "time_limit" {
        "时间上限"
    } else {
        "声称的时间"
    };
    if f.impossible {
        (
            format!(
                "{} {stated} is physically impossible: even at 100% MFU the run needs {min} (~{days:.0} days), {:.0}× longer",
                f.what,
                f.min_s / f.stated_s as f64
            ),
            format!(
                "{label_zh} {stated} 在物理上不可能：即使 MFU 达到 100%，也需要 {min}（约 {days:.0} 天），是其 {:.0} 倍",
                f.min_s / f.stated_s as f64
            ),
        )
    } else {
        (
            format!(
                "{} {stated} needs {:.0}% MFU; at the assumed MFU the run takes {est}",
                f.what,
                f.required_mfu * 100.0
            ),
            format!(
                "{label_zh} {stated} 需要 {:.0}% 的 MFU；按假定的 MFU 需要 {est}",
                f.required_mfu * 100.0
            ),
        )
    }
}
