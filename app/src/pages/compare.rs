//! `/compare?jobs=…&e=…`: two or more runs side by side — your jobs, or experiments shared with
//! you. Their facts (state, cards, cost, time), their loss and eval curves overlaid on one plot
//! aligned by step or by tokens trained, their results, and their specs diffed key by key. A
//! comparison of experiments is its own share link; one with jobs is shared by saving each job as
//! a published experiment (its snapshot, not its files), which gives the link.

use crate::api;
use crate::api_wire::{ApiError, StateKey};
use crate::compare::{Align, Run, RunRef, aligned, link_of, parse_query, results_side_by_side};
use crate::i18n::Key;
use crate::pages::auth::{AuthForm, Refusal};
use crate::pages::bits::{loading, note, tr};
use crate::pages::compare_load::load;
use crate::pages::job_results::metric_key;
use crate::plot::{Frame, overlay_chart};
use crate::router::Link;
use crate::session::use_session;
use crate::state::{I18n, use_i18n};
use ::api::results::{ResultRow, show_change, show_measure};
use leptos::prelude::*;
use leptos::task::spawn_local;

type Loaded = Option<Result<Vec<Run>, (RunRef, ApiError)>>;

#[component]
pub fn ComparePage(search: String) -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let refs = parse_query(&search);
    let enough = refs.len() >= 2;
    let loaded = RwSignal::new(None::<Result<Vec<Run>, (RunRef, ApiError)>>);
    // Read again when the account changes (a sign-in on this page).
    let account = Memo::new(move |_| session.me.with(|m| m.as_ref().map(|m| m.email.clone())));
    Effect::new(move |_| {
        account.track();
        if enough {
            let refs = refs.clone();
            spawn_local(async move {
                let _ = loaded.try_set(Some(load(refs).await));
            });
        }
    });
    view! {
        <section class="page compare" data-testid="page-compare">
            <h1>{tr(i, Key::CompareTitle)}</h1>
            {move || { i.lang.track(); shown(i, enough, loaded.get()) }}
        </section>
    }
}

fn shown(i: I18n, enough: bool, loaded: Loaded) -> AnyView {
    if !enough {
        return view! {
            <p class="muted" data-testid="compare-too-few">{i.t(Key::CompareNeedsTwo)}" "
                <Link href="/jobs">{i.t(Key::NavJobs)}</Link></p>
        }
        .into_any();
    }
    match loaded {
        None => loading(i),
        Some(Err((_, e))) if e.needs_sign_in() => view! { <AuthForm/> }.into_any(),
        Some(Err((r, e))) => view! {
            <p class="muted" data-testid="compare-refused-run">{r.id().to_string()}</p>
            <Refusal error=e testid="compare-error"/>
        }
        .into_any(),
        Some(Ok(runs)) => view! { <Compared runs=runs/> }.into_any(),
    }
}

fn href(r: &RunRef) -> String {
    match r {
        RunRef::Job(id) => format!("/jobs/{id}"),
        RunRef::Experiment(id) => format!("/e/{id}"),
    }
}

#[component]
fn Compared(runs: Vec<Run>) -> impl IntoView {
    let i = use_i18n();
    let heads = move |runs: &[Run]| {
        runs.iter()
            .enumerate()
            .map(|(n, r)| {
                let (link, title) = (href(&r.reference), r.title.clone());
                view! { <th scope="col" data-run=n><i class=format!("swatch r{n}")></i>
                <Link href=link>{title}</Link></th> }
            })
            .collect_view()
    };
    let row = move |label: Key, testid: &'static str, cells: Vec<String>| {
        view! { <tr data-testid=testid><th scope="row">{i.t(label)}</th>
        {cells.into_iter().map(|c| view! { <td>{c}</td> }).collect_view()}</tr> }
    };
    let facts = |f: &dyn Fn(&Run) -> String| runs.iter().map(f).collect::<Vec<_>>();
    let state = facts(&|r| {
        r.state
            .map(|s| i.t(s.key()).to_string())
            .unwrap_or_default()
    });
    let cards = facts(&|r| r.cards.clone());
    let cost = facts(&|r| {
        r.charged_fen
            .map(jobspec::yuan)
            .unwrap_or_else(|| "—".into())
    });
    let time = facts(&|r| {
        r.seconds
            .map(|s| i.duration(s as f64))
            .unwrap_or_else(|| "—".into())
    });
    let (run_heads, result_heads, diff_heads) = (heads(&runs), heads(&runs), heads(&runs));
    let (results_view, diff_view) = (
        results(i, &runs, result_heads),
        spec_diff(i, &runs, diff_heads),
    );
    view! {
        <div class="table-wrap">
            <table data-testid="compare-runs" data-runs=runs.len()>
                <thead><tr><th scope="col">{tr(i, Key::CompareRun)}</th>{run_heads}</tr></thead>
                <tbody>
                    {row(Key::State, "compare-state", state)}
                    {row(Key::Card, "compare-cards", cards)}
                    {row(Key::Charged, "compare-charged", cost)}
                    {row(Key::RanFor, "compare-time", time)}
                </tbody>
            </table>
        </div>
        <h2>{tr(i, Key::CompareCurves)}</h2>
        <Curves runs=runs.clone()/>
        {results_view}
        <h2>{tr(i, Key::SpecDiffTitle)}</h2>
        {diff_view}
        <Share runs=runs/>
    }
}

#[component]
fn Curves(runs: Vec<Run>) -> impl IntoView {
    let i = use_i18n();
    let by_step = aligned(&runs, Align::Step).unwrap_or_default();
    let by_tokens = aligned(&runs, Align::Tokens);
    let can_tokens = by_tokens.is_some();
    let tokens = RwSignal::new(false);
    let chart = Memo::new(move |_| {
        let series = match (&by_tokens, tokens.get()) {
            (Some(t), true) => t,
            _ => &by_step,
        };
        overlay_chart(series, Frame::STANDARD)
    });
    let titles: Vec<String> = runs.iter().map(|r| r.title.clone()).collect();
    view! {
        <label class="inline">{tr(i, Key::AlignBy)}" "
            <select data-testid="compare-align" on:change=move |ev| tokens.set(event_target_value(&ev) == "tokens")>
                <option value="step">{tr(i, Key::AlignStep)}</option>
                <option value="tokens" disabled=!can_tokens>{tr(i, Key::AlignTokens)}</option>
            </select>
        </label>
        {(!can_tokens).then(|| note(i, Key::TokensUnknown, "muted", "compare-tokens-unknown"))}
        {move || match chart.get() {
            None => note(i, Key::NoMetricsYet, "muted", "compare-chart-empty"),
            Some(c) => {
                let f = c.frame;
                let x_label = if tokens.get() { Key::TokensTrained } else { Key::Step };
                let paths = c.runs.iter().enumerate().map(|(n, r)| view! {
                    <path class=format!("train r{n}") data-testid="compare-train" data-run=n
                        data-points=r.train_points d=r.train.clone()></path>
                    <path class=format!("val r{n}") data-testid="compare-val" data-run=n
                        data-points=r.val_points d=r.val.clone()></path>
                }).collect_view();
                view! {
                    <figure class="chart overlay">
                        <svg data-testid="compare-chart" data-runs=c.runs.len()
                            data-align=if tokens.get() { "tokens" } else { "step" }
                            viewBox=format!("0 0 {} {}", f.width, f.height) role="img"
                            aria-label=i.t(Key::CompareCurves)>
                            {crate::pages::loss_chart::axes(i, f, &c.x_ticks, &c.y_ticks, x_label)}
                            {paths}
                        </svg>
                        <figcaption class="legend">
                            {titles.iter().enumerate().map(|(n, t)| view! {
                                <span><i class=format!("swatch r{n}")></i>{t.clone()}</span>
                            }).collect_view()}
                            <span>{format!("— {} · - - {}", i.t(Key::TrainLoss), i.t(Key::MeasureEvalLoss))}</span>
                        </figcaption>
                    </figure>
                }.into_any()
            }
        }}
    }
}

/// One run's result for a measure: base → trained, and the change, marked better or worse.
fn result_cell(i: I18n, n: usize, r: Option<ResultRow>) -> impl IntoView {
    let Some(r) = r else {
        return view! { <td data-testid="compare-result" data-run=n>"—"</td> }.into_any();
    };
    let better = r
        .change
        .filter(|c| *c != 0.0)
        .map(|c| (c > 0.0) == r.higher_is_better());
    let word = better.map(|b| i.t(if b { Key::Better } else { Key::Worse }));
    view! {
        <td data-testid="compare-result" data-run=n
            data-better=better.map(|b| if b { "better" } else { "worse" }).unwrap_or("")>
            {format!("{} → {}", show_measure(r.base), show_measure(r.trained))}
            <br/>
            <span class="muted">{show_change(r.change)}{word.map(|w| format!(" ({w})"))}</span>
        </td>
    }
    .into_any()
}

fn results(i: I18n, runs: &[Run], heads: impl IntoView + 'static) -> Option<AnyView> {
    let rows = results_side_by_side(runs);
    (!rows.is_empty()).then(|| {
        let body = rows
            .into_iter()
            .map(|(metric, cells)| {
                let name = metric_key(&metric).map_or(metric.clone(), |k| i.t(k).to_string());
                view! { <tr data-metric=metric><th scope="row">{name}</th>
                    {cells.into_iter().enumerate().map(|(n, c)| result_cell(i, n, c)).collect_view()}</tr> }
            })
            .collect_view();
        view! {
            <h2>{tr(i, Key::ResultsTitle)}</h2>
            <div class="table-wrap"><table class="results" data-testid="compare-results">
                <thead><tr><th scope="col">{tr(i, Key::ResultsMeasure)}</th>{heads}</tr></thead>
                <tbody>{body}</tbody>
            </table></div>
        }
        .into_any()
    })
}

fn spec_diff(i: I18n, runs: &[Run], heads: impl IntoView + 'static) -> AnyView {
    let specs: Vec<&str> = runs.iter().map(|r| r.spec.as_str()).collect();
    let diff = jobspec::spec_diff::spec_diff(&specs);
    if diff.is_empty() {
        return note(i, Key::SpecSame, "muted", "compare-spec-same");
    }
    let cell = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "—".to_string(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let body = diff
        .into_iter()
        .map(|(key, values)| {
            let shown = key.clone();
            view! { <tr data-testid="compare-spec-key" data-key=key>
                <th scope="row"><code>{shown}</code></th>
                {values.iter().map(|v| view! { <td><code>{cell(v)}</code></td> }).collect_view()}
            </tr> }
        })
        .collect_view();
    view! {
        <div class="table-wrap"><table data-testid="compare-spec-diff">
            <thead><tr><th scope="col">{tr(i, Key::SpecKey)}</th>{heads}</tr></thead>
            <tbody>{body}</tbody>
        </table></div>
    }
    .into_any()
}

/// The comparison's link: the page's own when every run is an experiment; else a button that
/// saves each job as a published experiment and gives the link of those.
#[component]
fn Share(runs: Vec<Run>) -> impl IntoView {
    let i = use_i18n();
    let refs: Vec<RunRef> = runs.iter().map(|r| r.reference.clone()).collect();
    let has_jobs = refs.iter().any(|r| matches!(r, RunRef::Job(_)));
    let link = RwSignal::new((!has_jobs).then(|| link_of(&refs)));
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<ApiError>);
    let share = move |_| {
        let runs = runs.clone();
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            match published(runs).await {
                Ok(refs) => link.set(Some(link_of(&refs))),
                Err(e) => error.set(Some(e)),
            }
            busy.set(false);
        });
    };
    view! {
        {has_jobs.then(|| view! {
            <h2>{tr(i, Key::ShareComparison)}</h2>
            <p class="muted">{tr(i, Key::ShareComparisonNote)}</p>
            <button type="button" data-testid="compare-share" prop:disabled=move || busy.get() on:click=share>
                {tr(i, Key::ShareComparison)}</button>
        })}
        <div aria-live="polite">
            {move || error.get().map(|e| view! { <Refusal error=e testid="compare-share-error"/> })}
            {move || link.get().map(|l| view! {
                <p class="share-link" data-testid="compare-link">
                    <span>{i.t(Key::ComparisonLink)}</span>
                    <input readonly=true aria-label=i.t(Key::ShareLink) prop:value=api::absolute(&l)/>
                    <a href=l.clone() data-testid="compare-link-open">{l.clone()}</a>
                </p>
            })}
        </div>
    }
}

/// Every run as an experiment: each job saved as a published snapshot (its metrics and
/// results, not its files); experiments as they are.
async fn published(runs: Vec<Run>) -> Result<Vec<RunRef>, ApiError> {
    let mut refs = Vec::new();
    for r in runs {
        refs.push(match r.reference {
            RunRef::Job(id) => {
                let body = serde_json::json!({"spec": r.spec, "job_id": id, "published": true});
                let saved: crate::api_wire::SavedExperiment =
                    api::post("/api/experiments", &body).await?;
                RunRef::Experiment(saved.id)
            }
            e => e,
        });
    }
    Ok(refs)
}
