//! LoRA's settings: rank, alpha and the layers it adapts, against the task and the model.

use super::checker::Checker;
use super::derive;
use super::valid::ALL_LINEAR;
use crate::diag::{Code, Diagnostic, did_you_mean, hint};
use crate::spec::*;

/// The unknown LoRA targets named one by one; the rest are counted in one more error, so that a
/// list of thousands of names costs no more to refuse than a short one.
const MAX_TARGETS_NAMED: usize = 4;

/// The model as a diagnostic names it, in English and Chinese: its catalogue id, or a model
/// given by its numbers.
fn model_label(spec: &JobSpec) -> (String, String) {
    match &spec.model {
        ModelRef::Id(id) => (format!("`{id}`"), format!("`{id}`")),
        ModelRef::Custom(_) => (
            "a Llama-style model given by its numbers".into(),
            "按数字给出的 Llama 式模型".into(),
        ),
    }
}

/// LoRA's settings, and the adapter output of a task that has none.
pub(super) fn check_adapter(c: &mut Checker<'_>, spec: &JobSpec) -> (u32, u32, Vec<String>) {
    let lora = check_lora(c, spec);
    if spec.output.merge_adapter && !spec.task.is_adapter() {
        c.warn(
            Code::Suspicious,
            "output.merge_adapter",
            format!(
                "merge_adapter is ignored for task = \"{}\": there is no adapter to merge",
                spec.task.as_str()
            ),
            format!(
                "task = \"{}\" 时 merge_adapter 会被忽略：没有可合并的适配器",
                spec.task.as_str()
            ),
        );
    }
    lora
}

fn check_lora(c: &mut Checker<'_>, spec: &JobSpec) -> (u32, u32, Vec<String>) {
    let t = &spec.train;
    if !spec.task.is_adapter() {
        if t.lora_rank.is_some() || t.lora_alpha.is_some() || t.lora_targets.is_some() {
            c.warn(
                Code::Suspicious,
                "train.lora_rank",
                format!(
                    "LoRA settings are ignored for task = \"{}\"; use task = \"lora\"",
                    spec.task.as_str()
                ),
                format!(
                    "task = \"{}\" 时 LoRA 设置会被忽略；请用 task = \"lora\"",
                    spec.task.as_str()
                ),
            );
        }
        return (0, 0, Vec::new());
    }
    if t.lora_rank.is_none() {
        c.info(
            Code::Defaulted,
            "train.lora_rank",
            format!("lora_rank not given: using {}", derive::DEFAULT_LORA_RANK),
            format!("未给出 lora_rank：使用 {}", derive::DEFAULT_LORA_RANK),
        );
    }
    let (rank, alpha, targets) = derive::lora(spec);
    if targets.is_empty() {
        c.error(
            Code::BadValue,
            "train.lora_targets",
            "lora_targets is empty: nothing would train".into(),
            "lora_targets 为空：没有可训练的参数".into(),
        );
    }
    check_targets(c, spec, &targets);
    (rank, alpha, targets)
}

/// Each LoRA target against the model's layers: the first few unknown ones by name, the rest
/// as a count.
fn check_targets(c: &mut Checker<'_>, spec: &JobSpec, targets: &[String]) {
    let family = derive::family(spec);
    let known: Vec<&str> = family
        .modules()
        .iter()
        .copied()
        .chain([ALL_LINEAR])
        .collect();
    let (en, zh) = model_label(spec);
    let mut unknown = targets
        .iter()
        .filter(|target| !known.contains(&target.as_str()));
    for target in unknown.by_ref().take(MAX_TARGETS_NAMED) {
        c.push(
            Diagnostic::error(
                Code::BadValue,
                "train.lora_targets",
                format!(
                    "`{target}` is not a layer of {en}; its LoRA targets are {}",
                    known.join(", ")
                ),
                format!(
                    "`{target}` 不是 {zh} 的层；它的 LoRA 目标可选：{}",
                    known.join(", ")
                ),
            )
            .with_help(hint(
                family
                    .counterpart(target)
                    .or_else(|| did_you_mean(target, known.iter().copied())),
            )),
        );
    }
    let more = unknown.count();
    if more > 0 {
        c.error(
            Code::BadValue,
            "train.lora_targets",
            format!(
                "{more} more of `train.lora_targets` are not layers of {en} either; its LoRA targets are {}",
                known.join(", ")
            ),
            format!(
                "`train.lora_targets` 中另有 {more} 项也不是 {zh} 的层；它的 LoRA 目标可选：{}",
                known.join(", ")
            ),
        );
    }
}
