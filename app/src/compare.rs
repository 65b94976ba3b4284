//! The comparison page's model, pure so it is tested natively: which runs a `/compare` link
//! names (`?jobs=` your jobs, `?e=` saved experiments, anyone's that you may see), each run as
//! the page holds it whichever it came from, their curves aligned by step or by tokens, and
//! their results side by side. The page (`pages/compare.rs`) fetches and draws.

use crate::api_wire::{Experiment, Job, JobState, MetricPoint};
use crate::plot::Series;
use api::results::{ResultRow, RunResults};

/// The most runs one comparison holds: more are not read from a link.
pub const MAX_RUNS: usize = 8;

/// A run a link names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunRef {
    /// One of the viewer's jobs.
    Job(String),
    /// A saved experiment: its owner's, or published.
    Experiment(String),
}

impl RunRef {
    pub fn id(&self) -> &str {
        match self {
            RunRef::Job(id) | RunRef::Experiment(id) => id,
        }
    }
}

/// Ids are hex (the edge's `random_hex`): anything else names nothing and never reaches a URL.
fn is_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The runs of a `/compare` query string (`?jobs=a,b&e=c`), jobs first, each once, at most
/// [`MAX_RUNS`]; ids of another shape are left out.
pub fn parse_query(search: &str) -> Vec<RunRef> {
    let mut refs: Vec<RunRef> = Vec::new();
    let pairs = || search.trim_start_matches('?').split('&');
    for (param, make) in [
        ("jobs=", RunRef::Job as fn(String) -> RunRef),
        ("e=", RunRef::Experiment),
    ] {
        for ids in pairs().filter_map(|p| p.strip_prefix(param)) {
            for id in ids.split([',', '+']).filter(|id| is_id(id)) {
                let r = make(id.to_ascii_lowercase());
                if !refs.contains(&r) {
                    refs.push(r);
                }
            }
        }
    }
    refs.truncate(MAX_RUNS);
    refs
}

/// The `/compare` link of `refs` (what [`parse_query`] reads back).
pub fn link_of(refs: &[RunRef]) -> String {
    let list = |job: bool| {
        refs.iter()
            .filter(|r| matches!(r, RunRef::Job(_)) == job)
            .map(RunRef::id)
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut parts = Vec::new();
    for (param, ids) in [("jobs", list(true)), ("e", list(false))] {
        if !ids.is_empty() {
            parts.push(format!("{param}={ids}"));
        }
    }
    format!("/compare?{}", parts.join("&"))
}

/// One run as the comparison shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub reference: RunRef,
    pub title: String,
    pub spec: String,
    /// `None` for an experiment saved from a plan, with no job.
    pub state: Option<JobState>,
    /// `2× a100-80g`, or empty.
    pub cards: String,
    pub charged_fen: Option<i64>,
    /// How long it ran, when it started and ended.
    pub seconds: Option<i64>,
    pub points: Vec<MetricPoint>,
    pub results: Option<RunResults>,
}

fn ran_for(started: Option<&str>, ended: Option<&str>) -> Option<i64> {
    let start = api::time::parse_rfc3339_ms(started?)?;
    let end = api::time::parse_rfc3339_ms(ended?)?;
    (end >= start).then_some((end - start) / 1000)
}

impl Run {
    pub fn of_job(job: Job, points: Vec<MetricPoint>, results: Option<RunResults>) -> Run {
        Run {
            reference: RunRef::Job(job.id.clone()),
            seconds: ran_for(job.started_at.as_deref(), job.ended_at.as_deref()),
            title: job.name,
            spec: job.spec,
            state: Some(job.state),
            cards: format!("{}× {}", job.cards, job.card),
            charged_fen: job.charged_fen,
            points,
            results,
        }
    }

    pub fn of_experiment(x: Experiment) -> Run {
        let job = x.job;
        Run {
            reference: RunRef::Experiment(x.id),
            title: x.title,
            spec: x.spec,
            state: job.as_ref().map(|j| j.state),
            cards: job
                .as_ref()
                .map(|j| format!("{}× {}", j.cards, j.card))
                .unwrap_or_default(),
            charged_fen: job.as_ref().and_then(|j| j.charged_fen),
            seconds: job
                .as_ref()
                .and_then(|j| ran_for(j.started_at.as_deref(), j.ended_at.as_deref())),
            points: job.as_ref().map(|j| j.metrics.clone()).unwrap_or_default(),
            results: job.and_then(|j| j.results),
        }
    }

    /// Its curves: the train loss it reported, and its eval loss: the evaluations of its
    /// results (the base model's at step 0 among them) when it has them, else the validation
    /// loss of its metrics; each x the step times `x_per_step`.
    pub fn series(&self, x_per_step: f64) -> Series {
        let mut s = Series::of(&self.points, x_per_step);
        let evals: Vec<(f64, f64)> = self
            .results
            .iter()
            .flat_map(|r| &r.history)
            .filter_map(|e| Some((e.step as f64 * x_per_step, e.loss?)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        if !evals.is_empty() {
            s.val = evals;
        }
        s
    }
}

/// What the curves' x axis is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Step,
    /// Tokens trained: step × the tokens a step of the run's spec trains.
    Tokens,
}

/// Every run's curves aligned as asked; `None` for tokens when a run's spec does not say how
/// many tokens a step trains.
pub fn aligned(runs: &[Run], align: Align) -> Option<Vec<Series>> {
    runs.iter()
        .map(|r| {
            let per_step = match align {
                Align::Step => 1.0,
                Align::Tokens => jobspec::spec_diff::tokens_per_step(&r.spec)?,
            };
            Some(r.series(per_step))
        })
        .collect()
}

/// A run's rows: the eval set's measures, then its benchmarks' (`task · metric`).
fn rows_of(r: &RunResults) -> Vec<ResultRow> {
    let benchmarks = r.benchmarks_shown().iter().map(|b| b.as_result_row());
    r.table_shown().iter().cloned().chain(benchmarks).collect()
}

/// The measures any run has results for, in the order they first appear, each with every
/// run's row (`None` where a run has no results or not that measure).
pub fn results_side_by_side(runs: &[Run]) -> Vec<(String, Vec<Option<ResultRow>>)> {
    let rows: Vec<Vec<ResultRow>> = runs
        .iter()
        .map(|r| r.results.as_ref().map(rows_of).unwrap_or_default())
        .collect();
    // Each measure's place, and each run's first row of it: linear in the rows.
    let mut metrics: Vec<String> = Vec::new();
    let mut place: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for row in rows.iter().flatten() {
        if !place.contains_key(row.metric.as_str()) {
            place.insert(&row.metric, metrics.len());
            metrics.push(row.metric.clone());
        }
    }
    let mut cells: Vec<Vec<Option<ResultRow>>> = vec![vec![None; rows.len()]; metrics.len()];
    for (run, r) in rows.iter().enumerate() {
        for row in r {
            let cell = &mut cells[place[row.metric.as_str()]][run];
            if cell.is_none() {
                *cell = Some(row.clone());
            }
        }
    }
    metrics.into_iter().zip(cells).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_names_runs_and_reads_back() {
        let refs = parse_query("?jobs=ab12,CD34,ab12&e=ef56&x=1");
        assert_eq!(
            refs,
            [
                RunRef::Job("ab12".into()),
                RunRef::Job("cd34".into()),
                RunRef::Experiment("ef56".into())
            ]
        );
        assert_eq!(link_of(&refs), "/compare?jobs=ab12,cd34&e=ef56");
        assert_eq!(parse_query(&link_of(&refs)["/compare".len()..]), refs);
        assert_eq!(link_of(&refs[2..]), "/compare?e=ef56");
    }

    #[test]
    fn ids_of_another_shape_name_nothing() {
        for q in [
            "?jobs=../../api/me",
            "?jobs=a%2Fb",
            "?e=",
            "?jobs=zz",
            &format!("?jobs={}", "a".repeat(65)),
        ] {
            assert!(parse_query(q).is_empty(), "{q}");
        }
        let many: Vec<String> = (0..20).map(|n| format!("{n:x}")).collect();
        assert_eq!(
            parse_query(&format!("?e={}", many.join(","))).len(),
            MAX_RUNS
        );
    }

    fn point(step: u64, loss: f64) -> MetricPoint {
        MetricPoint {
            step,
            loss,
            val_loss: None,
            lr: None,
            tokens_per_s: None,
            elapsed_s: 0.0,
            grad_norm: None,
            epoch: None,
            peak_mem_bytes: None,
        }
    }

    const SPEC: &str = "name = \"a\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\n[data]\ndataset = \"d\"\nseq_len = 512\n[train]\nsteps = 10\n[resources]\ncard = \"a100-80g\"\n";

    fn run(spec: &str, results: Option<RunResults>) -> Run {
        Run {
            reference: RunRef::Job("ab".into()),
            title: "a".into(),
            spec: spec.into(),
            state: Some(JobState::Succeeded),
            cards: String::new(),
            charged_fen: None,
            seconds: None,
            points: (1..=10).map(|s| point(s, 3.0)).collect(),
            results,
        }
    }

    fn results(rows: &[(&str, f64)]) -> RunResults {
        serde_json::from_value(serde_json::json!({
            "version": 2,
            "eval_set": {"source": "holdout", "examples": 4},
            "history": [{"step": 0, "loss": 4.0, "perplexity": null}, {"step": 10, "loss": 2.0, "perplexity": null}],
            "table": rows.iter().map(|(m, v)| serde_json::json!({"metric": m, "base": 1.0, "trained": v, "change": v - 1.0})).collect::<Vec<_>>(),
            "generation": {"max_new_tokens": 8, "greedy": true},
        }))
        .unwrap()
    }

    #[test]
    fn by_tokens_a_run_of_bigger_steps_goes_further() {
        let a = run(SPEC, None);
        let b = run(
            &SPEC.replace("steps = 10", "steps = 10\ngrad_accum = 4"),
            None,
        );
        let by_step = aligned(&[a.clone(), b.clone()], Align::Step).unwrap();
        assert_eq!(by_step[0].train.last(), by_step[1].train.last());
        let by_tokens = aligned(&[a.clone(), b], Align::Tokens).unwrap();
        let ends: Vec<f64> = by_tokens
            .iter()
            .map(|s| s.train.last().unwrap().0)
            .collect();
        assert_eq!(ends[1], 4.0 * ends[0]);
        let unknown = run("name = 1", None);
        assert_eq!(aligned(&[a, unknown], Align::Tokens), None);
    }

    #[test]
    fn the_eval_curve_is_the_results_evaluations_base_included() {
        let mut r = run(SPEC, Some(results(&[("loss", 2.0)])));
        r.points[9].val_loss = Some(2.2);
        assert_eq!(r.series(1.0).val, [(0.0, 4.0), (10.0, 2.0)]);
        r.results = None;
        assert_eq!(r.series(1.0).val, [(10.0, 2.2)]);
    }

    #[test]
    fn results_line_up_by_measure() {
        let a = run(SPEC, Some(results(&[("loss", 2.0), ("perplexity", 7.0)])));
        let b = run(SPEC, None);
        let c = run(
            SPEC,
            Some(results(&[("token_accuracy", 0.5), ("loss", 1.5)])),
        );
        let rows = results_side_by_side(&[a, b, c]);
        let names: Vec<&str> = rows.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(names, ["loss", "perplexity", "token_accuracy"]);
        let loss: Vec<Option<f64>> = rows[0].1.iter().map(|r| r.as_ref()?.trained).collect();
        assert_eq!(loss, [Some(2.0), None, Some(1.5)]);
        assert!(rows[1].1[2].is_none());
    }

    #[test]
    fn benchmarks_line_up_after_the_measures_with_their_own_direction() {
        let mut a = results(&[("loss", 2.0)]);
        a.benchmarks = serde_json::from_value(serde_json::json!([
            {"task": "sky", "metric": "perplexity", "base": 9.0, "trained": 3.0, "change": -6.0,
             "higher_is_better": false}
        ]))
        .unwrap();
        let rows = results_side_by_side(&[run(SPEC, Some(a)), run(SPEC, None)]);
        let names: Vec<&str> = rows.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(names, ["loss", "sky · perplexity"]);
        let sky = rows[1].1[0].clone().unwrap();
        assert!(!sky.higher_is_better());
        assert_eq!(sky.trained, Some(3.0));
    }
}
