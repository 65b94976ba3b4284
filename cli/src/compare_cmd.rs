//! `onramp compare JOB JOB… [--json]`: two or more of your jobs side by side: their state,
//! cards, cost and time; their losses at the steps they share; what each achieved
//! (`results.json`: eval loss, perplexity, token accuracy, base and trained); and their specs
//! diffed key by key (each spec read by jobspec with its defaults filled in, so `lr = 1e-4`
//! written out and left to its default compare as what they are).

use crate::jobs_cmd::{Args, done, edge_for, print_value};
use crate::remote::{Edge, Failure};
use crate::say::{pad, t, terminal_safe};
use api::artifacts::artifact_path;
use api::results::{RESULTS_ARTIFACT, RunResults, show_measure};
use api::{Job, MetricPoint, MetricsPage};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// The most pages of metrics read per job.
const MAX_PAGES: usize = 1000;
/// The most steps the terminal's curve table shows.
const CURVE_ROWS: usize = 12;

/// One job as the comparison holds it.
pub struct Compared {
    pub job: Job,
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
        job,
        points,
        results,
    })
}

/// Every `table.key` of a spec as jobspec reads it, defaults filled in; `None` for a spec it
/// cannot read.
pub fn spec_keys(toml: &str) -> Option<BTreeMap<String, Value>> {
    let (spec, _) = jobspec::parse_text(toml, jobspec::Format::Toml);
    let value = serde_json::to_value(spec?).ok()?;
    let mut out = BTreeMap::new();
    flatten("", &value, &mut out);
    Some(out)
}

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// The keys whose values differ between the specs, each with every spec's value (`null` where a
/// spec lacks the key or could not be read).
pub fn spec_diff(specs: &[&str]) -> Vec<(String, Vec<Value>)> {
    let read: Vec<BTreeMap<String, Value>> = specs
        .iter()
        .map(|s| spec_keys(s).unwrap_or_default())
        .collect();
    let mut keys: Vec<&String> = read.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let values: Vec<Value> = read
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or(Value::Null))
                .collect();
            values
                .iter()
                .any(|v| *v != values[0])
                .then(|| (k.clone(), values))
        })
        .collect()
}

fn seconds(j: &Job) -> Option<i64> {
    let start = api::time::parse_rfc3339_ms(j.started_at.as_deref()?)?;
    let end = api::time::parse_rfc3339_ms(j.ended_at.as_deref()?)?;
    Some((end - start) / 1000)
}

fn measure(r: &Option<RunResults>, metric: &str, trained: bool) -> Option<f64> {
    let row = r.as_ref()?.table.iter().find(|x| x.metric == metric)?;
    if trained { row.trained } else { row.base }
}

/// The comparison as JSON: each job's facts, points and results, and the spec diff.
pub fn as_json(all: &[Compared]) -> Value {
    let specs: Vec<&str> = all.iter().map(|c| c.job.spec.as_str()).collect();
    let diff: Vec<Value> = spec_diff(&specs)
        .into_iter()
        .map(|(key, values)| json!({"key": key, "values": values}))
        .collect();
    let jobs: Vec<Value> = all
        .iter()
        .map(|c| {
            json!({
                "id": c.job.id, "name": c.job.name, "state": c.job.state.as_str(),
                "card": c.job.card, "cards": c.job.cards, "charged_fen": c.job.charged_fen,
                "seconds": seconds(&c.job), "points": c.points, "results": c.results,
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
        t("job".into(), "作业".into()),
        each(&|c| c.job.id.clone()),
    ));
    out.push_str(&row(
        t("name".into(), "名称".into()),
        each(&|c| terminal_safe(&c.job.name)),
    ));
    out.push_str(&row(
        t("state".into(), "状态".into()),
        each(&|c| c.job.state.as_str().into()),
    ));
    out.push_str(&row(
        t("cards".into(), "卡".into()),
        each(&|c| format!("{} × {}", c.job.cards, c.job.card)),
    ));
    out.push_str(&row(
        t("charged".into(), "扣费".into()),
        each(&|c| {
            c.job
                .charged_fen
                .map(jobspec::yuan)
                .unwrap_or_else(|| "—".into())
        }),
    ));
    out.push_str(&row(
        t("ran for".into(), "运行时长".into()),
        each(&|c| {
            seconds(&c.job)
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
    curves(&mut out, all, &row);
    out.push_str(&t("\nspec differences:\n".into(), "\n规格差异：\n".into()));
    let specs: Vec<&str> = all.iter().map(|c| c.job.spec.as_str()).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "name = \"a\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\n[data]\ndataset = \"d\"\nseq_len = 512\n[train]\nsteps = 10\n[resources]\ncard = \"a100-80g\"\n";

    #[test]
    fn specs_differ_only_where_their_values_do_defaults_included() {
        let b = A
            .replace("steps = 10", "steps = 10\nlr = 0.0002")
            .replace("\"a\"", "\"b\"");
        let c = A
            .replace("seq_len = 512", "seq_len = 1024")
            .replace("\"a\"", "\"c\"");
        let diff = spec_diff(&[A, &b, &c]);
        let keys: Vec<&str> = diff.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["data.seq_len", "name", "train.lr"], "{diff:?}");
        let lr = &diff.iter().find(|(k, _)| k == "train.lr").unwrap().1;
        assert_eq!(lr[1], json!(0.0002));
        assert_eq!(lr[0], lr[2], "the default, the same in both");
        assert!(spec_diff(&[A, A]).is_empty());
    }
}
