//! `onramp results JOB [--json]`: what a job achieved, from the `results.json` artifact its
//! trainer pushed (api::results): the eval set, base against trained, each evaluation, and the
//! prompts with both models' answers. The job wrote every word of it, so its text reaches the
//! terminal only through `terminal_safe`.

use crate::jobs_cmd::{Args, done, edge_for, print_value};
use crate::remote::{Failure, describe_error};
use crate::say::{pad, t, terminal_safe};
use api::artifacts::artifact_path;
use api::results::{
    BenchmarkRow, RESULTS_ARTIFACT, ResultRow, RunResults, show_change, show_measure,
};
use std::process::ExitCode;

pub fn run(job: &str, edge: Option<String>, json: bool) -> Result<ExitCode, String> {
    let edge = edge_for(&Args {
        edge,
        ..Default::default()
    })?;
    done((|| {
        let answer = edge.get(&artifact_path(job, RESULTS_ARTIFACT))?;
        if answer.status == 404 {
            return Err(Failure(t(
                format!(
                    "job {job} has no results (yet): a job that trained to its end pushes results.json with its artifacts (onramp artifacts {job})"
                ),
                format!(
                    "作业 {job} （还）没有结果：训练完成的作业会随产物推送 results.json（onramp artifacts {job}）"
                ),
            )));
        }
        if !answer.ok() {
            return Err(describe_error(&answer));
        }
        if json {
            print_value(&answer.json);
            return Ok(());
        }
        let r: RunResults = serde_json::from_value(answer.json).map_err(|e| {
            Failure(t(
                format!("job {job}'s results.json cannot be read ({e})"),
                format!("作业 {job} 的 results.json 无法读取（{e}）"),
            ))
        })?;
        print!("{}", render(job, &r));
        Ok(())
    })())
}

fn change(row: &ResultRow) -> String {
    marked(
        row.change,
        row.change
            .filter(|c| *c != 0.0)
            .map(|c| (c > 0.0) == row.higher_is_better()),
    )
}

/// A change with its sign and, when known, whether it is an improvement.
fn marked(change: Option<f64>, improved: Option<bool>) -> String {
    let Some(c) = change else {
        return "—".into();
    };
    let mark = match improved {
        Some(true) => t(" (better)".into(), "（更好）".into()),
        Some(false) => t(" (worse)".into(), "（更差）".into()),
        None => String::new(),
    };
    format!("{}{mark}", show_change(Some(c)))
}

/// The benchmark tasks' table, when the run scored any.
fn benchmarks(out: &mut String, r: &RunResults) {
    let rows: &[BenchmarkRow] = r.benchmarks_shown();
    let Some(first) = rows.first() else {
        return;
    };
    out.push_str(&t(
        format!(
            "\nbenchmarks (lm-evaluation-harness, {}-shot):\n",
            first.fewshot
        ),
        format!(
            "\n基准任务（lm-evaluation-harness，{} 个示例）：\n",
            first.fewshot
        ),
    ));
    let head = [
        t("task".into(), "任务".into()),
        t("measure".into(), "指标".into()),
        t("base".into(), "基础模型".into()),
        t("trained".into(), "训练后".into()),
        t("change".into(), "变化".into()),
    ];
    out.push_str(&format!(
        "{}{}{}{}{}\n",
        pad(&head[0], 22),
        pad(&head[1], 18),
        pad(&head[2], 14),
        pad(&head[3], 14),
        head[4]
    ));
    for row in rows {
        out.push_str(&format!(
            "{}{}{}{}{}\n",
            pad(&terminal_safe(&row.task), 22),
            pad(&terminal_safe(&row.metric), 18),
            pad(&show_measure(row.base), 14),
            pad(&show_measure(row.trained), 14),
            marked(row.change, row.improved())
        ));
    }
}

/// A measure's name in the run's language (`onramp compare` names them the same way).
pub fn metric_name(m: &str) -> String {
    match m {
        "loss" => t("eval loss".into(), "评估损失".into()),
        "perplexity" => t("perplexity".into(), "困惑度".into()),
        "token_accuracy" => t("token accuracy".into(), "token 准确率".into()),
        other => terminal_safe(other),
    }
}

/// The results as the terminal shows them.
pub fn render(job: &str, r: &RunResults) -> String {
    let mut out = String::new();
    let set = match (
        r.eval_set.source.as_str(),
        &r.eval_set.dataset,
        r.eval_set.share,
    ) {
        ("dataset", Some(d), _) => t(
            format!("the dataset {}", terminal_safe(d)),
            format!("数据集 {}", terminal_safe(d)),
        ),
        (_, _, Some(s)) => t(
            format!("{:.1}% of the training data, held out", s * 100.0),
            format!("留出的 {:.1}% 训练数据", s * 100.0),
        ),
        _ => t("not said".into(), "未说明".into()),
    };
    out.push_str(&t(
        format!(
            "results of job {job}: evaluated on {set} ({} examples)\n\n",
            r.eval_set.examples
        ),
        format!(
            "作业 {job} 的结果：在{set}上评估（{} 条样本）\n\n",
            r.eval_set.examples
        ),
    ));
    let head = [
        t("measure".into(), "指标".into()),
        t("base".into(), "基础模型".into()),
        t("trained".into(), "训练后".into()),
        t("change".into(), "变化".into()),
    ];
    out.push_str(&format!(
        "{}{}{}{}\n",
        pad(&head[0], 18),
        pad(&head[1], 14),
        pad(&head[2], 14),
        head[3]
    ));
    for row in &r.table {
        out.push_str(&format!(
            "{}{}{}{}\n",
            pad(&metric_name(&row.metric), 18),
            pad(&show_measure(row.base), 14),
            pad(&show_measure(row.trained), 14),
            change(row)
        ));
    }
    if r.table.is_empty() {
        out.push_str(&t(
            "(no eval set: the data was too small to hold any out)\n".into(),
            "（没有评估集：数据太少，无法留出）\n".into(),
        ));
    }
    benchmarks(&mut out, r);
    if !r.history.is_empty() {
        out.push_str(&t("\nevaluations:\n".into(), "\n各次评估：\n".into()));
        for h in &r.history {
            out.push_str(&t(
                format!(
                    "  step {:>6}  loss {}  perplexity {}  token accuracy {}\n",
                    h.step,
                    show_measure(h.loss),
                    show_measure(h.perplexity),
                    show_measure(h.token_accuracy)
                ),
                format!(
                    "  第 {:>6} 步  损失 {}  困惑度 {}  token 准确率 {}\n",
                    h.step,
                    show_measure(h.loss),
                    show_measure(h.perplexity),
                    show_measure(h.token_accuracy)
                ),
            ));
        }
    }
    samples(&mut out, r);
    out
}

fn samples(out: &mut String, r: &RunResults) {
    if r.samples.is_empty() {
        return;
    }
    out.push_str(&t(
        format!(
            "\nanswers (greedy, at most {} tokens):\n",
            r.generation.max_new_tokens
        ),
        format!(
            "\n回答（贪心解码，最多 {} 个 token）：\n",
            r.generation.max_new_tokens
        ),
    ));
    let none = || t("(none)".into(), "（无）".into());
    for (i, s) in r.samples.iter().enumerate() {
        let base = s.base.as_deref().map(terminal_safe).unwrap_or_else(none);
        let trained = s.trained.as_deref().map(terminal_safe).unwrap_or_else(none);
        out.push_str(&t(
            format!(
                "\n[{}] prompt:  {}\n    base:    {base}\n    trained: {trained}\n",
                i + 1,
                terminal_safe(s.prompt.trim_end())
            ),
            format!(
                "\n[{}] 提示：  {}\n    基础模型：{base}\n    训练后：  {trained}\n",
                i + 1,
                terminal_safe(s.prompt.trim_end())
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_says_which_way_each_measure_moved_and_job_text_cannot_drive_the_terminal() {
        let r: RunResults = serde_json::from_str(
            r#"{"version":1,"eval_set":{"source":"holdout","share":0.1,"examples":20},
            "history":[{"step":0,"loss":5.5,"perplexity":244.69,"token_accuracy":0.01},
                       {"step":30,"loss":1.5,"perplexity":4.48,"token_accuracy":0.6}],
            "table":[{"metric":"loss","base":5.5,"trained":1.5,"change":-4.0},
                     {"metric":"token_accuracy","base":0.01,"trained":0.6,"change":0.59}],
            "samples":[{"prompt":"Say \u001b]0;pwned\u0007hi","base":"x","trained":null}],
            "benchmarks":[{"task":"arc_\u001b[2Jeasy","metric":"acc","base":0.25,"trained":0.5,
                           "change":0.25,"higher_is_better":true,"examples":4,"fewshot":5},
                          {"task":"sky","metric":"perplexity","base":9.0,"trained":12.0,
                           "change":3.0,"higher_is_better":false}],
            "generation":{"max_new_tokens":8,"greedy":true}}"#,
        )
        .unwrap();
        let text = render("ab12", &r);
        assert!(
            text.contains("benchmarks (lm-evaluation-harness, 5-shot)"),
            "{text}"
        );
        assert!(text.contains("+0.2500 (better)"), "{text}");
        assert!(text.contains("+3.0000 (worse)"), "{text}");
        assert!(text.contains("10.0% of the training data"), "{text}");
        assert!(text.contains("-4.0000 (better)"), "{text}");
        assert!(text.contains("+0.5900 (better)"), "{text}");
        assert!(text.contains("step     30"), "{text}");
        assert!(text.contains("trained: (none)"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}
