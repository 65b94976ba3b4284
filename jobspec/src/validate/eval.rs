//! `[eval]` against the rest of the spec: its eval set, its tasks, and prompts that fit in a
//! sequence with their answers.

use super::checker::Checker;
use super::text::{TextKind, check_dataset, check_text};
use crate::diag::{Code, Diagnostic, did_you_mean, hint};
use crate::eval_spec::{
    EvalSpec, KNOWN_TASKS, MAX_PROMPT_CHARS, MAX_PROMPTS, MAX_TASK_NAME, MAX_TASKS, is_task_name,
};
use crate::spec::{JobSpec, Task};

pub(super) fn check_eval(c: &mut Checker<'_>, spec: &JobSpec, steps: u64, world: u32) {
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
        if *ds == spec.data.dataset {
            c.warn(
                Code::Suspicious,
                "eval.dataset",
                format!("`eval.dataset` = \"{ds}\" is the dataset it trains on: its loss measures how well the model remembers it; hold out a share instead (`eval.holdout`)"),
                format!("`eval.dataset` = \"{ds}\" 就是训练用的数据集：其损失只衡量模型记住了多少；请改为留出一部分（`eval.holdout`）"),
            );
        }
    }
    check_tasks(c, e);
    check_tasks_on_one_rank(c, spec, world);
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
    if e.tasks.len() > MAX_TASKS {
        c.error(
            Code::BadValue,
            "eval.tasks",
            format!(
                "`eval.tasks` lists {} tasks; at most {MAX_TASKS}",
                e.tasks.len()
            ),
            format!(
                "`eval.tasks` 列了 {} 个任务；最多 {MAX_TASKS} 个",
                e.tasks.len()
            ),
        );
        // Each name is not checked too: a spec of thousands of names costs no more to refuse.
        return;
    }
    for (i, task) in e.tasks.iter().enumerate() {
        if !is_task_name(task) {
            c.error(
                Code::BadValue,
                "eval.tasks",
                format!("task {} of `eval.tasks` is not a task name: use ASCII letters, digits, `_`, `-` and `.`, starting with a letter or a digit, at most {MAX_TASK_NAME} characters", i + 1),
                format!("`eval.tasks` 的第 {} 项不是任务名：只能用 ASCII 字母、数字、`_`、`-` 和 `.`，以字母或数字开头，最多 {MAX_TASK_NAME} 个字符", i + 1),
            );
        } else if e.tasks[..i].contains(task) {
            c.error(
                Code::BadValue,
                "eval.tasks",
                format!("`eval.tasks` lists \"{task}\" twice"),
                format!("`eval.tasks` 把 \"{task}\" 列了两次"),
            );
        } else if !KNOWN_TASKS.contains(&task.as_str()) {
            c.push(
                Diagnostic::warning(
                    Code::Suspicious,
                    "eval.tasks",
                    format!(
                        "`eval.tasks` has \"{task}\", which is not one of the well-known tasks ({}); it runs only where the cluster has it (its task folder or lm-eval's own tasks, with their data), which the job checks before it trains",
                        KNOWN_TASKS.join(", ")
                    ),
                    format!(
                        "`eval.tasks` 中的 \"{task}\" 不是常见任务（{}）；只有集群有它（任务目录或 lm-eval 自带的任务及其数据）时才能运行，作业在训练前会检查",
                        KNOWN_TASKS.join("、")
                    ),
                )
                .with_help(hint(did_you_mean(task, KNOWN_TASKS.iter().copied()))),
            );
        }
    }
    let unused = e.tasks.is_empty() && (e.fewshot > 0 || e.task_max_examples.is_some());
    if unused {
        let path = if e.fewshot > 0 {
            "eval.fewshot"
        } else {
            "eval.task_max_examples"
        };
        c.warn(
            Code::Suspicious,
            path,
            "`eval.fewshot` and `eval.task_max_examples` apply to `eval.tasks`, which lists none: they do nothing".into(),
            "`eval.fewshot` 和 `eval.task_max_examples` 作用于 `eval.tasks`，而它没有列任务：这两项不起作用".into(),
        );
    }
}

/// Benchmarks are scored by rank 0 alone on the model in memory, so it must hold all of it.
fn check_tasks_on_one_rank(c: &mut Checker<'_>, spec: &JobSpec, world: u32) {
    if spec.eval.tasks.is_empty() {
        return;
    }
    let p = &spec.parallel;
    if p.zero_stage == 3 && world > 1 {
        c.error(
            Code::Conflict,
            "eval.tasks",
            format!("`eval.tasks` are scored by one rank on the whole model, and `parallel.zero_stage` = 3 spreads the model over the job's {world} ranks: use ZeRO stage 2 or less, or drop `eval.tasks` and score the trained model afterwards"),
            format!("`eval.tasks` 由一个 rank 在完整模型上评分，而 `parallel.zero_stage` = 3 把模型分散到作业的 {world} 个 rank 上：请用 ZeRO 2 及以下，或删去 `eval.tasks`，训练后再给模型评分"),
        );
    } else if p.sp > 1 {
        c.error(
            Code::Conflict,
            "eval.tasks",
            format!("`eval.tasks` are scored by one rank on whole sequences, and `parallel.sp` = {} splits each sequence over ranks: drop one of them", p.sp),
            format!("`eval.tasks` 由一个 rank 在完整序列上评分，而 `parallel.sp` = {} 把每条序列分到多个 rank 上：请去掉其中之一", p.sp),
        );
    } else if p.tp > 1 {
        c.error(
            Code::Conflict,
            "eval.tasks",
            format!("`eval.tasks` are scored by one rank on the whole model, and `parallel.tp` = {} slices every layer over ranks: use ZeRO stage 2 or less with tp = 1, or drop `eval.tasks` and score the trained model afterwards", p.tp),
            format!("`eval.tasks` 由一个 rank 在完整模型上评分，而 `parallel.tp` = {} 把每一层切到多个 rank 上：请设 tp = 1 并用 ZeRO 2 及以下，或删去 `eval.tasks`，训练后再给模型评分", p.tp),
        );
    }
}

fn check_prompts(c: &mut Checker<'_>, e: &EvalSpec, seq_len: u32) {
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
        // Each prompt is not checked too, as with `eval.tasks`: a list of thousands costs no
        // more to refuse than a short one.
        return;
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
