//! `[eval]` against the rest of the spec: its eval set, its tasks, and prompts that fit in a
//! sequence with their answers.

use super::checker::Checker;
use super::text::{TextKind, check_dataset, check_text, is_dataset_id};
use crate::diag::{Code, Diagnostic, did_you_mean, hint};
use crate::eval_spec::{EvalSpec, KNOWN_TASKS, MAX_PROMPT_CHARS, MAX_PROMPTS};
use crate::spec::{JobSpec, Task};

pub(super) fn check_eval(c: &mut Checker<'_>, spec: &JobSpec, steps: u64) {
    let e = &spec.eval;
    if spec.task == Task::TinyTrain {
        if !e.is_default() {
            c.error(
                Code::Conflict,
                "eval",
                "`[eval]` sets how onramp-train evaluates; tiny-train reports its own validation loss: drop `[eval]`".into(),
                "`[eval]` 设置 onramp-train 的评估方式；tiny-train 自己报告验证损失：请删去 `[eval]`".into(),
            );
        }
        return;
    }
    if let Some(ds) = &e.dataset {
        check_dataset(c, "eval.dataset", ds);
        if is_dataset_id(ds) {
            c.error(
                Code::BadValue,
                "eval.dataset",
                format!("`eval.dataset` = \"{ds}\" is an uploaded dataset; a job fetches only its `data.dataset` from the edge, so evaluate on a held-out share of it (`eval.holdout`) or on a dataset the cluster holds"),
                format!("`eval.dataset` = \"{ds}\" 是上传的数据集；作业只从边缘服务取回它的 `data.dataset`，请用其中留出的一部分评估（`eval.holdout`），或用集群已有的数据集"),
            );
        }
    }
    check_tasks(c, e);
    check_prompts(c, e, spec.data.seq_len);
    if let Some(every) = e.every_steps
        && every > steps
    {
        c.warn(
            Code::Suspicious,
            "eval.every_steps",
            format!("`eval.every_steps` = {every} is more than the run's {steps} steps: it evaluates only before and after training"),
            format!("`eval.every_steps` = {every} 大于本次运行的 {steps} 步：只在训练前后评估"),
        );
    }
}

fn check_tasks(c: &mut Checker<'_>, e: &EvalSpec) {
    for task in &e.tasks {
        if KNOWN_TASKS.contains(&task.as_str()) {
            c.error(
                Code::BadValue,
                "eval.tasks",
                format!("`eval.tasks` has \"{task}\": benchmark tasks (lm-evaluation-harness) are not run by onramp-train yet, and a task the job cannot run is not accepted; the eval set's loss, perplexity and token accuracy, and `eval.prompts`, are"),
                format!("`eval.tasks` 中有 \"{task}\"：onramp-train 还不运行基准任务（lm-evaluation-harness），作业跑不了的任务不予接受；评估集的损失、困惑度、token 准确率和 `eval.prompts` 可以使用"),
            );
        } else {
            c.push(
                Diagnostic::error(
                    Code::BadValue,
                    "eval.tasks",
                    format!(
                        "`eval.tasks` has \"{task}\", which is not a known task; known: {}",
                        KNOWN_TASKS.join(", ")
                    ),
                    format!(
                        "`eval.tasks` 中的 \"{task}\" 不是已知任务；已知：{}",
                        KNOWN_TASKS.join("、")
                    ),
                )
                .with_help(hint(did_you_mean(task, KNOWN_TASKS.iter().copied()))),
            );
        }
    }
}

fn check_prompts(c: &mut Checker<'_>, e: &EvalSpec, seq_len: u32) {
    if e.prompts.len() > MAX_PROMPTS {
        c.error(
            Code::BadValue,
            "eval.prompts",
            format!(
                "`eval.prompts` lists {} prompts; at most {MAX_PROMPTS}",
                e.prompts.len()
            ),
            format!(
                "`eval.prompts` 列了 {} 个提示；最多 {MAX_PROMPTS} 个",
                e.prompts.len()
            ),
        );
    }
    let room = u64::from(seq_len);
    let answer = u64::from(e.max_new_tokens(seq_len));
    // The default fits any seq_len of 2 and up; only an answer length the spec gives is refused.
    let no_room = e.max_new_tokens.is_some() && answer >= room;
    if no_room {
        c.error(
            Code::Conflict,
            "eval.max_new_tokens",
            format!("`eval.max_new_tokens` = {answer} leaves no room for a prompt in `data.seq_len` = {seq_len}; make it smaller than {seq_len}"),
            format!("`eval.max_new_tokens` = {answer} 在 `data.seq_len` = {seq_len} 中没有给提示留位置；请小于 {seq_len}"),
        );
    }
    for (i, p) in e.prompts.iter().enumerate() {
        let n = i + 1;
        let path = "eval.prompts";
        if p.trim().is_empty() {
            c.error(
                Code::BadValue,
                path,
                format!("prompt {n} of `eval.prompts` is empty"),
                format!("`eval.prompts` 的第 {n} 个提示是空的"),
            );
            continue;
        }
        let chars = p.chars().count();
        if chars > MAX_PROMPT_CHARS {
            c.error(Code::BadValue, path, format!("prompt {n} of `eval.prompts` has {chars} characters; at most {MAX_PROMPT_CHARS}"), format!("`eval.prompts` 的第 {n} 个提示有 {chars} 个字符；最多 {MAX_PROMPT_CHARS} 个"));
            continue;
        }
        check_text(c, path, p, TextKind::Prompt);
        let least = EvalSpec::min_prompt_tokens(p) as u64;
        if !no_room && least + answer > room {
            c.error(
                Code::Conflict,
                path,
                format!("prompt {n} of `eval.prompts` ({} bytes) is at least {least} tokens; with its answer of up to `eval.max_new_tokens` = {answer} it does not fit in `data.seq_len` = {seq_len}: shorten the prompt, lower `eval.max_new_tokens`, or raise `data.seq_len`", p.len()),
                format!("`eval.prompts` 的第 {n} 个提示（{} 字节）至少 {least} 个 token；加上最多 `eval.max_new_tokens` = {answer} 个 token 的回答，放不进 `data.seq_len` = {seq_len}：请缩短提示、调小 `eval.max_new_tokens` 或调大 `data.seq_len`", p.len()),
            );
        }
    }
}
