//! Training time from FLOPs over cards × peak × MFU, cost in fen, and the physics check.

use super::params::ParamCount;
use crate::spec::{Recompute, format_duration, format_duration_zh};
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
    /// Of `seconds`: the GPUs' compute at the assumed MFU.
    pub compute_seconds: f64,
    /// Of `seconds`: offloaded states crossing each card's host link (0 without offload).
    pub offload_seconds: f64,
    /// Of `seconds`: the optimizer step on the host's CPUs (0 unless the optimizer is offloaded).
    pub cpu_optimizer_seconds: f64,
    /// Bytes one card moves over its host link per optimizer step.
    pub offload_bytes_per_step: f64,
}

/// The share of a PCIe x16 link's nominal rate that bulk copies reach (128b/130b coding and
/// protocol overhead leave about 80%: 25 of 32 GB/s on PCIe 4.0 in `bandwidthTest` runs).
pub const HOST_LINK_EFFICIENCY: f64 = 0.8;
/// The share of peak DRAM bandwidth a streaming kernel reaches (STREAM triad on two-socket
/// servers reaches 60–80%; DeepSpeed's CPU Adam, vectorised but strided over four arrays,
/// taken at 50%).
pub const HOST_MEM_EFFICIENCY: f64 = 0.5;
/// Bytes DeepSpeed's CPU Adam touches per parameter per step: reads fp32 param, grad, m and v
/// (16), writes param, m and v (12) and the 16-bit copy sent back to the GPU (2).
pub const CPU_ADAM_BYTES_PER_PARAM: f64 = 30.0;

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
    let (compute_seconds, min_seconds) = if peak > 0.0 && mfu > 0.0 {
        (flops * recompute_factor / (peak * mfu), flops / peak)
    } else {
        (f64::INFINITY, f64::INFINITY)
    };
    let off = offload(v, pc);
    let steps = v.steps() as f64;
    let offload_seconds = steps * off.link_seconds_per_step;
    let cpu_optimizer_seconds = steps * off.optimizer_seconds_per_step;
    TimeEstimate {
        flops,
        seconds: compute_seconds + offload_seconds + cpu_optimizer_seconds,
        mfu,
        min_seconds,
        tokens,
        peak_flops: peak,
        recompute_factor,
        compute_seconds,
        offload_seconds,
        cpu_optimizer_seconds,
        offload_bytes_per_step: off.bytes_per_step,
    }
}

/// What offloading costs per optimizer step, on top of the compute.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffloadCost {
    /// Bytes one card moves over its host link.
    pub bytes_per_step: f64,
    pub link_seconds_per_step: f64,
    pub optimizer_seconds_per_step: f64,
}

/// The traffic and host work of ZeRO-Offload / ZeRO-Infinity per optimizer step, per card
/// (every card moves its own share over its own link at once, so one card's time is the step's):
///
/// - parameters offloaded (stage 3): every forward and backward pass (and the recomputed
///   forward) fetches the card's 1/N partition of the 16-bit model, 2Ψ/N bytes a pass, for each
///   of the step's micro-batches;
/// - optimizer offloaded: each micro-batch's 16-bit gradient partition (2Ψ/N) goes to the host,
///   and after the step the updated 16-bit partition comes back (2Ψ/N, unless the parameters
///   live on the host anyway); the CPUs run Adam over the node's partitions, bound by DRAM
///   bandwidth at [`CPU_ADAM_BYTES_PER_PARAM`].
///
/// Nothing is assumed to overlap with compute: DeepSpeed overlaps part of it, so this is an
/// upper bound on what offload adds. LoRA moves only its adapters, which are small.
pub fn offload(v: &ValidSpec, pc: &ParamCount) -> OffloadCost {
    let s = v.spec();
    let p = &s.parallel;
    let none = OffloadCost {
        bytes_per_step: 0.0,
        link_seconds_per_step: 0.0,
        optimizer_seconds_per_step: 0.0,
    };
    let off_opt = p.offload_optimizer != crate::spec::Offload::None;
    let off_par = p.offload_params != crate::spec::Offload::None && p.zero_stage >= 3;
    if !(off_opt || off_par) || !v.card().is_gpu {
        return none;
    }
    let model_par = f64::from(p.tp) * f64::from(p.pp);
    let trained = if s.task.is_adapter() {
        pc.adapter
    } else {
        pc.total
    } as f64
        / model_par.max(1.0);
    let ranks = (f64::from(v.world_size()) / model_par.max(1.0)).max(1.0);
    let width = s.train.precision.bytes() as f64;
    let share = width * trained / ranks;
    let micro = f64::from(s.train.grad_accum);
    let passes = if s.train.grad_checkpointing == Recompute::Full {
        3.0
    } else {
        2.0
    };
    let mut bytes = 0.0;
    if off_par {
        bytes += micro * passes * share;
    }
    if off_opt {
        bytes += micro * share + if off_par { 0.0 } else { share };
    }
    let link = v.card().node.host_link_gbps * 1e9 * HOST_LINK_EFFICIENCY;
    let link_seconds = if link > 0.0 { bytes / link } else { 0.0 };
    let optimizer_seconds = if off_opt {
        let per_node = trained / f64::from(s.resources.nodes.max(1));
        let mem = v.card().node.mem_gbps * 1e9 * HOST_MEM_EFFICIENCY;
        if mem > 0.0 {
            per_node * CPU_ADAM_BYTES_PER_PARAM / mem
        } else {
            0.0
        }
    } else {
        0.0
    };
    OffloadCost {
        bytes_per_step: bytes,
        link_seconds_per_step: link_seconds,
        optimizer_seconds_per_step: optimizer_seconds,
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
    let (stated_zh, min_zh, est_zh) = (
        format_duration_zh(f.stated_s as f64),
        format_duration_zh(f.min_s),
        format_duration_zh(f.estimated_s),
    );
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
                "{label_zh} {stated_zh} 在物理上不可能：即使 MFU 达到 100%，也需要 {min_zh}（约 {days:.0} 天），是其 {:.0} 倍",
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
                "{label_zh} {stated_zh} 需要 {:.0}% 的 MFU；按假定的 MFU 需要 {est_zh}",
                f.required_mfu * 100.0
            ),
        )
    }
}
