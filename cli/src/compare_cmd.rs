//! `onramp compare RUN RUN… [--json]`: two or more runs side by side, each one of your jobs or
//! a saved experiment (`e/<id>` or its link, as the app's Compare page takes them): their state,
//! cards, cost and time; their losses at the steps they share; what each achieved
//! (`results.json`: eval loss, perplexity, token accuracy, base and trained); and their specs
//! diffed key by key (each spec read by jobspec with its defaults filled in, so `lr = 1e-4`
//! written out and left to its default compare as what they are).

use crate::jobs_cmd::{Args, done, edge_for, print_value};
use crate::remote::{Edge, Failure};
use crate::say::{pad, t, terminal_safe};
use api::artifacts::artifact_path;
use api::experiments::Experiment;
use api::results::{RESULTS_ARTIFACT, RunResults, show_measure};
use api::{Job, JobState, MetricPoint, MetricsPage};
use jobspec::spec_diff::spec_diff;
use serde_json::{Value, json};
use std::process::ExitCode;

/// The most pages of metrics read per job.
const MAX_PAGES: usize = 1000;
/// The most steps the terminal's curve table shows.
const CURVE_ROWS: usize = 12;

/// One run as the comparison holds it: a job of yours, or a saved experiment (the snapshot of
/// a spec, and of its job's result when it was saved from one).
pub struct Compared {
    /// The job's id, or `e/<id>` for an experiment.
    pub id: String,
    pub name: String,
    /// None for an experiment of a spec alone.
    pub state: Option<JobState>,
    /// The card and how many, when it ran (an experiment of a spec alone has none).
    pub card: Option<(String, u32)>,
    pub charged_fen: Option<i64>,
    pub seconds: Option<i64>,
    pub spec: String,
    pub points: Vec<MetricPoint>,
    pub results: Option<RunResults>,
}

pub fn run(jobs: &[String], edge: Option<String>, json: bool) -> Result<ExitCode, String> {
    let edge = edge_for(&Args {
        edge,
        ..Default::default()
    })?;
    done((|| {
        let mut all = Vec::new();
        for id in jobs {
            all.push(fetch(&edge, id)?);
        }
        if json {
            print_value(&as_json(&all));
        } else {
            print!("{}", render(&all));
        }
        Ok(())
    })())
}

fn fetch(edge: &Edge, id: &str) -> Result<Compared, Failure> {
    if let Some(x) = id.strip_prefix("e/") {
        return experiment(edge, x);
    }
    let job: Job = Edge::typed(&edge.expect_ok(edge.get(&format!("/api/jobs/{id}")))?)?;
    let mut points: Vec<MetricPoint> = Vec::new();
    let mut since = 0;
    for _ in 0..MAX_PAGES {
        let page: MetricsPage = Edge::typed(
            &edge.expect_ok(edge.get(&format!("/api/jobs/{id}/metrics?since={since}")))?,
        )?;
        let done = page.metrics.is_empty() || page.next_since <= since;
        points.extend(page.metrics);
        if done {
            break;
        }
        since = page.next_since;
    }
    let answer = edge.get(&artifact_path(id, RESULTS_ARTIFACT))?;
    let results = answer
        .ok()
        .then(|| serde_json::from_value(answer.json).ok())
        .flatten();
    Ok(Compared {
        seconds: seconds(job.started_at.as_deref(), job.ended_at.as_deref()),
        id: job.id,
        name: job.name,
        state: Some(job.state),
        card: Some((job.card, job.cards)),
        charged_fen: job.charged_fen,
        spec: job.spec,
        points,
        results,
    })
}

/// A saved experiment as the link shows it to the caller (a published one to anyone, an
/// unpublished one to its owner): what its snapshot kept, the results shared with it among them.
fn experiment(edge: &Edge, id: &str) -> Result<Compared, Failure> {
    let x: Experiment = Edge::typed(&edge.expect_ok(edge.get(&format!("/api/experiments/{id}")))?)?;
    let mut results = x.job.as_ref().and_then(|j| j.results.clone());
    if results.is_none()
        && let Some(a) = x.artifacts.iter().find(|a| a.name == RESULTS_ARTIFACT)
    {
        let answer = edge.get(&a.url)?;
        results = answer
            .ok()
            .then(|| serde_json::from_value(answer.json).ok())
            .flatten();
    }
    let job = x.job;
    Ok(Compared {
        id: format!("e/{}", x.id),
        name: x.title,
        state: job.as_ref().map(|j| j.state),
        card: job.as_ref().map(|j| (j.card.clone(), j.cards)),
        charged_fen: job.as_ref().and_then(|j| j.charged_fen),
        seconds: job
            .as_ref()
            .and_then(|j| seconds(j.started_at.as_deref(), j.ended_at.as_deref())),
        points: job.map(|j| j.metrics).unwrap_or_default(),
        spec: x.spec,
        results,
    })
}

fn seconds(started: Option<&str>, ended: Option<&str>) -> Option<i64> {
    let start = api::time::parse_rfc3339_ms(started?)?;
    let end = api::time::parse_rfc3339_ms(ended?)?;
    Some((end - start) / 1000)
}

fn measure(r: &Option<RunResults>, metric: &str, trained: bool) -> Option<f64> {
    let row = r.as_ref()?.table.iter().find(|x| x.metric == metric)?;
    if trained { row.trained } else { row.base }
}

/// The benchmark measures any job has (`task · metric`), in the order they first appear.
fn benchmark_names(all: &[Compared]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in all.iter().filter_map(|c| c.results.as_ref()) {
        for b in r.benchmarks_shown() {
            let name = b.as_result_row().metric;
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Each benchmark measure's base and trained rows, one column a job.
fn benchmark_rows(out: &mut String, all: &[Compared], row: &dyn Fn(String, Vec<String>) -> String) {
    for name in benchmark_names(all) {
        let shown = terminal_safe(&name);
        let cells = |trained: bool| {
            all.iter()
                .map(|c| show_measure(benchmark(&c.results, &name, trained)))
                .collect()
        };
        out.push_str(&row(
            t(format!("{shown} (base)"), format!("{shown}（基础）")),
            cells(false),
        ));
        out.push_str(&row(
            t(format!("{shown} (trained)"), format!("{shown}（训练后）")),
            cells(true),
        ));
    }
}

fn benchmark(r: &Option<RunResults>, name: &str, trained: bool) -> Option<f64> {
    let row = r
        .as_ref()?
        .benchmarks_shown()
        .iter()
        .map(|b| b.as_result_row())
        .find(|x| x.metric == name)?;
    if trained { row.trained } else { row.base }
}

/// The comparison as JSON: each job's facts, points and results, and the spec diff.
pub fn as_json(all: &[Compared]) -> Value {
    let specs: Vec<&str> = all.iter().map(|c| c.spec.as_str()).collect();
    let diff: Vec<Value> = spec_diff(&specs)
        .into_iter()
        .map(|(key, values)| json!({"key": key, "values": values}))
        .collect();
    let jobs: Vec<Value> = all
        .iter()
        .map(|c| {
            json!({
                "id": c.id, "name": c.name, "state": c.state.map(JobState::as_str),
                "card": c.card.as_ref().map(|c| &c.0), "cards": c.card.as_ref().map(|c| c.1),
                "charged_fen": c.charged_fen,
                "seconds": c.seconds, "points": c.points, "results": c.results,
            })
        })
        .collect();
    json!({"jobs": jobs, "spec_diff": diff})
}

/// The comparison as the terminal shows it.
pub fn render(all: &[Compared]) -> String {
    let mut out = String::new();
    let col = |s: &str| pad(s, 18);
    let row = |label: String, cells: Vec<String>| {
        let mut line = pad(&label, 22);
        for c in cells {
            line.push_str(&col(&c));
        }
        line + "\n"
    };
    let each = |f: &dyn Fn(&Compared) -> String| all.iter().map(f).collect::<Vec<_>>();
    out.push_str(&row(
        t("run".into(), "运行".into()),
        each(&|c| terminal_safe(&c.id)),
    ));
    out.push_str(&row(
        t("name".into(), "名称".into()),
        each(&|c| terminal_safe(&c.name)),
    ));
    out.push_str(&row(
        t("state".into(), "状态".into()),
        each(&|c| c.state.map_or("—", JobState::as_str).into()),
    ));
    out.push_str(&row(
        t("cards".into(), "卡".into()),
        each(&|c| {
            c.card.as_ref().map_or_else(
                || "—".into(),
                |(card, n)| format!("{n} × {}", terminal_safe(card)),
            )
        }),
    ));
    out.push_str(&row(
        t("charged".into(), "扣费".into()),
        each(&|c| {
            c.charged_fen
                .map(jobspec::yuan)
                .unwrap_or_else(|| "—".into())
        }),
    ));
    out.push_str(&row(
        t("ran for".into(), "运行时长".into()),
        each(&|c| {
            c.seconds
                .map(api::time::words_for_seconds)
                .unwrap_or_else(|| "—".into())
        }),
    ));
    for metric in ["loss", "perplexity", "token_accuracy"] {
        let name = crate::results_cmd::metric_name(metric);
        out.push_str(&row(
            t(format!("{name} (base)"), format!("{name}（基础）")),
            each(&|c| show_measure(measure(&c.results, metric, false))),
        ));
        out.push_str(&row(
            t(format!("{name} (trained)"), format!("{name}（训练后）")),
            each(&|c| show_measure(measure(&c.results, metric, true))),
        ));
    }
    benchmark_rows(&mut out, all, &row);
    curves(&mut out, all, &row);
    out.push_str(&t("\nspec differences:\n".into(), "\n规格差异：\n".into()));
    let specs: Vec<&str> = all.iter().map(|c| c.spec.as_str()).collect();
    let diff = spec_diff(&specs);
    if diff.is_empty() {
        out.push_str(&t(
            "  (none: the same spec)\n".into(),
            "  （无：规格相同）\n".into(),
        ));
    }
    for (key, values) in diff {
        let cells = values
            .iter()
            .map(|v| terminal_safe(&v.to_string()))
            .collect();
        out.push_str(&row(format!("  {key}"), cells));
    }
    out
}

/// Train loss at the steps every job reported, evenly picked.
fn curves(out: &mut String, all: &[Compared], row: &dyn Fn(String, Vec<String>) -> String) {
    let mut shared: Vec<u64> = all
        .first()
        .map(|c| c.points.iter().map(|p| p.step).collect())
        .unwrap_or_default();
    shared.retain(|s| all.iter().all(|c| c.points.iter().any(|p| p.step == *s)));
    shared.dedup();
    if shared.is_empty() {
        return;
    }
    out.push_str(&t(
        "\ntrain loss at the steps all reported:\n".into(),
        "\n各作业都报告过的步上的训练损失：\n".into(),
    ));
    let every = shared.len().div_ceil(CURVE_ROWS).max(1);
    let last = *shared.last().unwrap_or(&0);
    for (n, step) in shared.iter().enumerate() {
        if n % every != 0 && *step != last {
            continue;
        }
        let cells = all
            .iter()
            .map(|c| {
                let p = c.points.iter().rev().find(|p| p.step == *step);
                show_measure(p.map(|p| p.loss))
            })
            .collect();
        out.push_str(&row(
            t(format!("  step {step}"), format!("  第 {step} 步")),
            cells,
        ));
    }
}
