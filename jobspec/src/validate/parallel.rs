//! The parallel settings DeepSpeed allows together, sequence and tensor parallelism as
//! onramp-train runs them (DeepSpeed's Ulysses, DeepSpeed's AutoTP on the model's Hugging Face
//! `tp_plan`), and the settings onramp-train does not run (pipeline parallelism, selective
//! recomputation).

use super::checker::Checker;
use crate::catalog::Arch;
use crate::diag::Code;
use crate::spec::{JobSpec, ParallelSpec, Recompute, Task, TrainSpec};

/// Sequence parallelism as onramp-train runs it, DeepSpeed's Ulysses: every sequence split
/// evenly, the attention heads (and the key/value heads, or their copies) split evenly across
/// the `sp` ranks, and an attention that Ulysses wraps (SDPA or FlashAttention, which
/// `flash_attention` selects; not eager, not a model's own code).
pub(super) fn check_sequence_parallel(c: &mut Checker<'_>, spec: &JobSpec, arch: Option<&Arch>) {
    let sp = spec.parallel.sp;
    if spec.data.seq_len.checked_rem(sp) != Some(0) {
        c.error(
            Code::Conflict,
            "parallel.sp",
            format!("sp = {sp} must divide seq_len = {}", spec.data.seq_len),
            format!("sp = {sp} 必须整除 seq_len = {}", spec.data.seq_len),
        );
    }
    if sp <= 1 {
        return;
    }
    if let Some(a) = arch {
        if !a.heads.is_multiple_of(sp) {
            c.error(
                Code::Conflict,
                "parallel.sp",
                format!(
                    "sp = {sp} must divide the {} attention heads (DeepSpeed-Ulysses splits heads)",
                    a.heads
                ),
                format!(
                    "sp = {sp} 必须整除 {} 个注意力头（DeepSpeed-Ulysses 按头切分）",
                    a.heads
                ),
            );
        } else if !a.kv_heads.is_multiple_of(sp) && !sp.is_multiple_of(a.kv_heads.max(1)) {
            c.error(
                Code::Conflict,
                "parallel.sp",
                format!(
                    "sp = {sp} and the {} key/value heads must divide one another (DeepSpeed-Ulysses splits them, or copies them when there are fewer)",
                    a.kv_heads
                ),
                format!(
                    "sp = {sp} 与 {} 个键值头必须能互相整除（DeepSpeed-Ulysses 切分它们，较少时复制）",
                    a.kv_heads
                ),
            );
        }
    }
    if !spec.train.flash_attention {
        c.error(
            Code::Conflict,
            "train.flash_attention",
            format!("sp = {sp} runs DeepSpeed-Ulysses around SDPA or FlashAttention, not eager attention; set flash_attention = true or sp = 1"),
            format!("sp = {sp} 的 DeepSpeed-Ulysses 包裹的是 SDPA 或 FlashAttention，而不是普通注意力；请设 flash_attention = true 或 sp = 1"),
        );
    }
    if let Some(id) = super::derive::catalogue_model(spec)
        .filter(|m| m.remote_code)
        .map(|m| m.id)
    {
        c.error(
            Code::Conflict,
            "parallel.sp",
            format!("sp = {sp}: `{id}` attends with its repository's own code, which DeepSpeed-Ulysses cannot wrap; set sp = 1 (ZeRO-3 with offload_params = \"cpu\" saves memory instead)"),
            format!("sp = {sp}：`{id}` 用其仓库自带的代码计算注意力，DeepSpeed-Ulysses 无法包裹；请设 sp = 1（可改用 ZeRO-3 加 offload_params = \"cpu\" 节省显存）"),
        );
    }
}

/// Tensor parallelism as onramp-train runs it: DeepSpeed's AutoTP slicing every layer as the
/// model's Hugging Face `tp_plan` says (q/k/v and gate/up by columns, o and down by rows), with
/// ZeRO stage 0 to 2, for a training of every weight. A split the job could not run is refused
/// here, naming what runs instead.
pub(super) fn check_tensor_parallel(c: &mut Checker<'_>, spec: &JobSpec, arch: Option<&Arch>) {
    let p = &spec.parallel;
    let tp = p.tp;
    if tp <= 1 {
        return;
    }
    if matches!(spec.task, Task::Lora | Task::Qlora) {
        let task = spec.task.as_str();
        c.error(
            Code::Conflict,
            "parallel.tp",
            format!(
                "tp = {tp} splits every weight of a full training (task = \"sft\" or \"pretrain\"); \
                 task = \"{task}\" trains only its adapter on a frozen base, which DeepSpeed's AutoTP \
                 does not split: spread the base across the cards with ZeRO-3 instead \
                 (parallel.zero_stage = 3) and set tp = 1"
            ),
            format!(
                "tp = {tp} 切分的是全量训练（task = \"sft\" 或 \"pretrain\"）的每个权重；\
                 task = \"{task}\" 只在冻结的底座上训练适配器，DeepSpeed 的 AutoTP 不切分它：\
                 请改用 ZeRO-3 把底座分到各卡上（parallel.zero_stage = 3），并设 tp = 1"
            ),
        );
    }
    if p.zero_stage == 3 {
        c.error(
            Code::Conflict,
            "parallel.zero_stage",
            format!("tp = {tp} runs as DeepSpeed's AutoTP, which works with ZeRO stage 0, 1 or 2, not 3; set zero_stage = 2, or tp = 1 to keep ZeRO-3"),
            format!("tp = {tp} 以 DeepSpeed 的 AutoTP 运行，只能与 ZeRO 0、1 或 2 同用，不能与 3 同用；请设 zero_stage = 2，或设 tp = 1 保留 ZeRO-3"),
        );
    }
    if p.sp > 1 {
        c.error(
            Code::Conflict,
            "parallel.tp",
            format!("tp = {tp} and sp = {} together are not run; keep one of them (sp for long sequences, tp for a model too large for one card's memory)", p.sp),
            format!("tp = {tp} 与 sp = {} 不能同时运行；请只保留一个（长序列用 sp，单卡放不下的模型用 tp）", p.sp),
        );
    }
    if let Some(a) = arch {
        for (what, what_zh, n) in [
            ("key/value heads", "个键值头", a.kv_heads),
            ("MLP width (ffn)", "的 MLP 宽度（ffn）", a.ffn),
        ] {
            if !n.is_multiple_of(tp) {
                c.error(
                    Code::Conflict,
                    "parallel.tp",
                    format!("tp = {tp} must divide the {n} {what}: each rank holds an equal slice"),
                    format!("tp = {tp} 必须整除 {n} {what_zh}：每个进程持有相等的一份"),
                );
            }
        }
    }
    if let Some(id) = super::derive::catalogue_model(spec)
        .filter(|m| m.remote_code)
        .map(|m| m.id)
    {
        c.error(
            Code::Conflict,
            "parallel.tp",
            format!("tp = {tp}: `{id}` runs its repository's own code, which has no Hugging Face tp_plan to split by; set tp = 1 (ZeRO-3 with offload_params = \"cpu\" saves memory instead)"),
            format!("tp = {tp}：`{id}` 运行其仓库自带的代码，没有可按其切分的 Hugging Face tp_plan；请设 tp = 1（可改用 ZeRO-3 加 offload_params = \"cpu\" 节省显存）"),
        );
    }
}

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
