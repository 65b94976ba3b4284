//! The optimizer's numbers and the `[deepspeed]` table: a key the run would not read is a
//! warning, so that a setting never silently does nothing.

use super::checker::Checker;
use crate::catalog::Card;
use crate::diag::Code;
use crate::spec::*;
use crate::zero_tuning::{BELOW_STAGE3_ONLY, STAGE3_ONLY};

pub(super) fn check_tuning(c: &mut Checker<'_>, spec: &JobSpec, card: Option<&Card>) {
    super::ranges::check_tuning_ranges(c, spec);
    let t = &spec.train;
    let tiny = spec.task == Task::TinyTrain;
    if tiny {
        check_tiny_train(c, t);
    }
    let optimizer = if tiny { Optimizer::Adamw } else { t.optimizer };
    let (unused, runs): (&[(&str, bool)], &str) = match optimizer {
        Optimizer::Sgd => (
            &[
                ("adam_beta1", t.adam_beta1.is_some()),
                ("adam_beta2", t.adam_beta2.is_some()),
                ("adam_epsilon", t.adam_epsilon.is_some()),
            ],
            "sgd",
        ),
        Optimizer::Adamw => (&[("momentum", t.momentum.is_some())], "adamw"),
    };
    for (key, _) in unused.iter().filter(|(_, set)| *set) {
        let path = format!("train.{key}");
        c.warn(
            Code::Suspicious,
            &path,
            format!("`{path}` is ignored: optimizer = \"{runs}\" does not use it"),
            format!("`{path}` 不起作用：optimizer = \"{runs}\" 不使用它"),
        );
    }
    let tuned = spec.deepspeed.entries();
    if tuned.is_empty() {
        return;
    }
    if card.is_some_and(|c| !c.is_gpu) || tiny {
        c.warn(
            Code::Suspicious,
            "deepspeed",
            "`[deepspeed]` is ignored: this job runs without DeepSpeed (a CPU card or tiny-train)"
                .into(),
            "`[deepspeed]` 不起作用：此作业不使用 DeepSpeed（CPU 或 tiny-train）".into(),
        );
        return;
    }
    let stage = spec.parallel.zero_stage;
    for (key, _) in tuned {
        let path = format!("deepspeed.{key}");
        let ignored = stage == 0
            || (stage < 3 && STAGE3_ONLY.contains(&key))
            || (stage == 3 && BELOW_STAGE3_ONLY.contains(&key));
        if ignored {
            c.warn(
                Code::Suspicious,
                &path,
                format!("`{path}` is ignored at ZeRO stage {stage}"),
                format!("`{path}` 在 ZeRO {stage} 阶段不起作用"),
            );
        }
    }
    if stage == 3 {
        check_live_parameters(c, spec);
    }
}

/// What tiny-train runs of `[train]`: AdamW, one micro-batch a step, warmup then cosine decay
/// (model-tiny's `train.rs`). An accumulation it would not run makes the plan's steps, tokens
/// and cost wrong, so it is refused; the rest is ignored with a warning.
fn check_tiny_train(c: &mut Checker<'_>, t: &TrainSpec) {
    if t.optimizer == Optimizer::Sgd {
        c.warn(
            Code::Suspicious,
            "train.optimizer",
            "tiny-train runs AdamW: `train.optimizer = \"sgd\"` is ignored".into(),
            "tiny-train 使用 AdamW：`train.optimizer = \"sgd\"` 不起作用".into(),
        );
    }
    if t.grad_accum > 1 {
        c.error(
            Code::Conflict,
            "train.grad_accum",
            format!(
                "tiny-train takes one micro-batch a step and does not accumulate gradients: \
                 `train.grad_accum` = {} would not run; set it to 1 and raise `train.micro_batch` instead",
                t.grad_accum
            ),
            format!(
                "tiny-train 每步只用一个微批次，不做梯度累积：`train.grad_accum` = {} 不会生效；\
                 请设为 1，改为调大 `train.micro_batch`",
                t.grad_accum
            ),
        );
    }
    if t.schedule != Schedule::Cosine {
        c.warn(
            Code::Suspicious,
            "train.schedule",
            format!(
                "tiny-train runs warmup then cosine decay: `train.schedule = \"{}\"` is ignored",
                t.schedule.as_str()
            ),
            format!(
                "tiny-train 使用预热加余弦衰减：`train.schedule = \"{}\"` 不起作用",
                t.schedule.as_str()
            ),
        );
    }
}

/// The plan's memory follows DeepSpeed's estimator, which assumes ZeRO-3's limits on gathered
/// and prefetched parameters at their defaults; a limit raised above them may hold more.
fn check_live_parameters(c: &mut Checker<'_>, spec: &JobSpec) {
    let d = ZeroTuning::defaults();
    let z = &spec.deepspeed;
    let raised = [
        (
            "stage3_max_live_parameters",
            z.stage3_max_live_parameters,
            d.stage3_max_live_parameters,
        ),
        (
            "stage3_prefetch_bucket_size",
            z.stage3_prefetch_bucket_size,
            d.stage3_prefetch_bucket_size,
        ),
    ];
    let bytes = spec.train.precision.bytes();
    for (key, set, default) in raised {
        let (Some(set), Some(default)) = (set, default) else {
            continue;
        };
        if set <= default {
            continue;
        }
        let path = format!("deepspeed.{key}");
        let gib = (set - default).saturating_mul(bytes) as f64 / (1u64 << 30) as f64;
        c.warn(
            Code::Suspicious,
            &path,
            format!(
                "`{path}` = {set} is above DeepSpeed's default {default}: each GPU may hold up to \
                 {gib:.1} GiB more parameters than the plan's memory figure, which assumes the default"
            ),
            format!(
                "`{path}` = {set} 高于 DeepSpeed 的默认值 {default}：每张 GPU 可能比计划中的显存数字\
                 多占用最多 {gib:.1} GiB 参数（该数字按默认值计算）"
            ),
        );
    }
}
