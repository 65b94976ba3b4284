//! What a run achieved, on the job page and on an experiment's page: the `results.json` artifact
//! its trainer pushed (api::results), as a table of base against trained (eval loss,
//! perplexity, token accuracy, and which way each moved), the benchmark tasks it was scored on
//! (lm-evaluation-harness, base against trained) and both models' answers to the same prompts. A job wrote it: every string is shown as text, every number through
//! `show_measure`, and a file over `MAX_RESULTS_BYTES` is not fetched.

use crate::api;
use crate::i18n::Key;
use crate::pages::bits::tr;
use crate::state::{I18n, use_i18n};
use ::api::Artifact;
use ::api::results::{
    BenchmarkRow, MAX_RESULTS_BYTES, RESULTS_ARTIFACT, ResultRow, RunResults, Sample, show_change,
    show_measure,
};
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The results among `artifacts`, fetched and shown; nothing when the run left none.
#[component]
pub fn RunResultsView(artifacts: Vec<Artifact>) -> impl IntoView {
    let i = use_i18n();
    let results = RwSignal::new(None::<RunResults>);
    if let Some(a) = artifacts
        .iter()
        .find(|a| a.name == RESULTS_ARTIFACT && a.size <= MAX_RESULTS_BYTES)
    {
        let url = a.url.clone();
        spawn_local(async move {
            if let Ok(r) = api::get::<RunResults>(&url).await {
                let _ = results.try_set(Some(r));
            }
        });
    }
    move || results.get().map(|r| shown(i, r))
}

/// The words for a measure of `results.json`, `None` for one this build does not know.
pub fn metric_key(metric: &str) -> Option<Key> {
    match metric {
        "loss" => Some(Key::MeasureEvalLoss),
        "perplexity" => Some(Key::MeasurePerplexity),
        "token_accuracy" => Some(Key::MeasureTokenAccuracy),
        _ => None,
    }
}

/// A change with its sign and, when known, whether it is an improvement.
fn change_cell(i: I18n, change: Option<f64>, improved: Option<bool>) -> impl IntoView {
    let better = improved.map(|b| if b { "better" } else { "worse" });
    let word = improved.map(|b| if b { Key::Better } else { Key::Worse });
    view! {
        <td data-testid="result-change" data-better=better.unwrap_or("")>
            {show_change(change)}{word.map(|k| format!(" ({})", i.t(k)))}
        </td>
    }
}

fn row(i: I18n, r: ResultRow) -> impl IntoView {
    let improved = r
        .change
        .filter(|c| *c != 0.0)
        .map(|c| (c > 0.0) == r.higher_is_better());
    let name = match metric_key(&r.metric) {
        Some(k) => i.t(k).to_string(),
        None => r.metric.clone(),
    };
    view! {
        <tr data-metric=r.metric.clone()>
            <th scope="row">{name}</th>
            <td data-testid="result-base">{show_measure(r.base)}</td>
            <td data-testid="result-trained">{show_measure(r.trained)}</td>
            {change_cell(i, r.change, improved)}
        </tr>
    }
}

fn benchmark(i: I18n, r: BenchmarkRow) -> impl IntoView {
    let improved = r.improved();
    let (task, metric) = (r.task.clone(), r.metric.clone());
    view! {
        <tr data-testid="benchmark" data-task=task data-metric=metric>
            <th scope="row">{r.task}</th>
            <td>{r.metric}</td>
            <td data-testid="result-base">{show_measure(r.base)}</td>
            <td data-testid="result-trained">{show_measure(r.trained)}</td>
            {change_cell(i, r.change, improved)}
        </tr>
    }
}

/// The benchmark tasks' table, when the run scored any.
fn benchmarks(i: I18n, r: &RunResults) -> Option<impl IntoView + use<>> {
    let rows = r.benchmarks_shown().to_vec();
    let shots = rows.first()?.fewshot;
    let items = rows.into_iter().map(|x| benchmark(i, x)).collect_view();
    Some(view! {
        <h3>{tr(i, Key::ResultsBenchmarks)}" "{shots}</h3>
        <table class="results" data-testid="run-benchmarks">
            <thead><tr>
                <th scope="col">{tr(i, Key::ResultsTask)}</th>
                <th scope="col">{tr(i, Key::ResultsMeasure)}</th>
                <th scope="col">{tr(i, Key::ResultsBase)}</th>
                <th scope="col">{tr(i, Key::ResultsTrained)}</th>
                <th scope="col">{tr(i, Key::ResultsChange)}</th>
            </tr></thead>
            <tbody>{items}</tbody>
        </table>
    })
}

fn sample(i: I18n, s: Sample) -> impl IntoView {
    let none = || i.t(Key::NoAnswer).to_string();
    view! {
        <tr data-testid="run-sample">
            <td><pre class="sample">{s.prompt}</pre></td>
            <td><pre class="sample" data-testid="sample-base">{s.base.unwrap_or_else(none)}</pre></td>
            <td><pre class="sample" data-testid="sample-trained">{s.trained.unwrap_or_else(none)}</pre></td>
        </tr>
    }
}

/// The results as the job page and an experiment's page show them.
pub fn shown(i: I18n, r: RunResults) -> impl IntoView {
    let set = match (
        r.eval_set.source.as_str(),
        r.eval_set.dataset.clone(),
        r.eval_set.share,
    ) {
        ("dataset", Some(d), _) => format!("{} {d}", i.t(Key::EvalOnDataset)),
        // A share is a fraction; a file that says otherwise is shown within 0–100%.
        (_, _, Some(s)) => format!(
            "{} {:.1}%",
            i.t(Key::EvalOnHoldout),
            if s.is_finite() {
                s.clamp(0.0, 1.0)
            } else {
                0.0
            } * 100.0
        ),
        _ => String::new(),
    };
    let examples = format!("{} {}", r.eval_set.examples, i.t(Key::EvalExamples));
    let benchmarks = benchmarks(i, &r);
    // At most a page of each: a results file is the job's own word, of up to 4 MiB.
    let rows = r
        .table_shown()
        .iter()
        .cloned()
        .map(|x| row(i, x))
        .collect_view();
    let samples = (!r.samples.is_empty()).then(|| {
        let items = r
            .samples_shown()
            .iter()
            .cloned()
            .map(|s| sample(i, s))
            .collect_view();
        view! {
            <h3>{tr(i, Key::ResultsAnswers)}</h3>
            <table class="results samples" data-testid="run-samples">
                <thead><tr>
                    <th scope="col">{tr(i, Key::ResultsPrompt)}</th>
                    <th scope="col">{tr(i, Key::ResultsBase)}</th>
                    <th scope="col">{tr(i, Key::ResultsTrained)}</th>
                </tr></thead>
                <tbody>{items}</tbody>
            </table>
        }
    });
    view! {
        <h2>{tr(i, Key::ResultsTitle)}</h2>
        <p class="muted" data-testid="run-eval-set">{set}" · "{examples}</p>
        <table class="results" data-testid="run-results">
            <thead><tr>
                <th scope="col">{tr(i, Key::ResultsMeasure)}</th>
                <th scope="col">{tr(i, Key::ResultsBase)}</th>
                <th scope="col">{tr(i, Key::ResultsTrained)}</th>
                <th scope="col">{tr(i, Key::ResultsChange)}</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        {benchmarks}
        {samples}
    }
}
