//! The parallel settings DeepSpeed allows together, and the settings onramp-train does not run
//! (pipeline parallelism, selective recomputation).

use super::checker::Checker;
use crate::diag::Code;
use crate::spec::{ParallelSpec, Recompute, TrainSpec};

/// DeepSpeed's own combination rules, and pipeline parallelism, which onramp-train does not run
/// (a setting the job would ignore is refused, never costed and then dropped).
pub(super) fn check_deepspeed(c: &mut Checker<'_>, p: &ParallelSpec) {
    if p.pp > 1 {
        c.error(
            Code::BadValue,
            "parallel.pp",
            format!(
                "pp = {}: onramp-train does not run pipeline parallelism, so the job would train without it; \
                 split the model's states across the cards with ZeRO-3 instead (parallel.zero_stage = 3, \
                 with offload_params = \"cpu\" if it still does not fit) and set pp = 1",
                p.pp
            ),
            format!(
                "pp = {}：onramp-train 不运行流水线并行，作业会在没有它的情况下训练；\
                 请改用 ZeRO-3 把模型状态分到各卡上（parallel.zero_stage = 3，仍放不下时再设 offload_params = \"cpu\"），并设 pp = 1",
                p.pp
            ),
        );
    }
    if p.pp > 1 && p.zero_stage >= 2 {
        c.error(
            Code::Conflict,
            "parallel.zero_stage",
            format!(
                "DeepSpeed pipeline parallelism (pp = {}) works with ZeRO stage 0 or 1 only",
                p.pp
            ),
            format!(
                "DeepSpeed 流水线并行（pp = {}）只能与 ZeRO 0 或 1 同用",
                p.pp
            ),
        );
    }
    if p.offload_optimizer.is_on() && p.zero_stage == 0 {
        c.error(
            Code::Conflict,
            "parallel.offload_optimizer",
            "optimizer offload needs ZeRO stage 1, 2 or 3".into(),
            "优化器卸载需要 ZeRO 1、2 或 3".into(),
        );
    }
    if p.offload_params.is_on() && p.zero_stage != 3 {
        c.error(
            Code::Conflict,
            "parallel.offload_params",
            "parameter offload needs ZeRO stage 3".into(),
            "参数卸载需要 ZeRO 3".into(),
        );
    }
    if p.offload_params.is_on() && !p.offload_optimizer.is_on() {
        c.warn(
            Code::Suspicious,
            "parallel.offload_params",
            "parameters are offloaded but the optimizer is not; offload the optimizer first, it saves more".into(),
            "参数已卸载但优化器未卸载；先卸载优化器，省得更多".into(),
        );
    }
}

/// Selective recomputation (only attention's cheap parts, Korthikanti et al. 2022) is not what
/// the locked Transformers runs: its gradient checkpointing recomputes whole layers. Refused,
/// naming the two settings that run as costed.
pub(super) fn check_recompute(c: &mut Checker<'_>, t: &TrainSpec) {
    if t.grad_checkpointing == Recompute::Selective {
        c.error(
            Code::BadValue,
            "train.grad_checkpointing",
            "grad_checkpointing = \"selective\": onramp-train recomputes whole layers, not only \
             attention, so the job would not run as planned; use \"full\" (true: least memory, about \
             a third more compute) or \"none\" (false: fastest, most memory)"
                .into(),
            "grad_checkpointing = \"selective\"：onramp-train 按整层重算，而不是只重算注意力，作业不会按计划运行；\
             请改用 \"full\"（true：显存最少，计算量约多三分之一）或 \"none\"（false：最快，显存最多）"
                .into(),
        );
    }
}
