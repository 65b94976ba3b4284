//! `/e/:id`: a saved experiment, read-only — its spec, the estimates saved with it and, when a
//! job ran, its result and loss curve. The snapshot holds nothing private (no email, no
//! balance), and an unknown id says so.

use crate::api;
use crate::api_wire::{Experiment, StateKey};
use crate::i18n::{Key, bytes};
use crate::pages::auth::Refusal;
use crate::pages::bits::{fact, loading, note};
use crate::pages::loss_chart::LossChart;
use crate::state::use_i18n;
use ::api::time::short_utc;
use jobspec::yuan;
use leptos::prelude::*;

#[component]
pub fn ExperimentPage(id: String) -> impl IntoView {
    let i = use_i18n();
    let snapshot: api::Fetched<Experiment> = RwSignal::new(None);
    api::fetch_into(format!("/api/experiments/{id}"), snapshot);
    view! {
        <section class="page experiment" data-testid="page-experiment" data-id=id>
            {move || { i.lang.track(); match snapshot.get() {
                None => loading(i),
                Some(Err(e)) if e.status == 404 => note(i, Key::UnknownExperiment, "error", "experiment-unknown"),
                Some(Err(e)) => view! { <Refusal error=e testid="experiment-error"/> }.into_any(),
                Some(Ok(x)) => view! { <Snapshot x=x/> }.into_any(),
            }}}
        </section>
    }
}

#[component]
fn Snapshot(x: Experiment) -> impl IntoView {
    let i = use_i18n();
    let p = x.plan_summary();
    let metrics = x
        .job
        .as_ref()
        .map(|j| j.metrics.clone())
        .unwrap_or_default();
    // The results the snapshot keeps; an older snapshot's from the artifacts it shares.
    let results = x.job.as_ref().and_then(|j| j.results.clone());
    let from_artifacts = results.is_none().then(|| x.artifacts.clone());
    let owner = x.yours.then(|| {
        view! { <crate::pages::experiment_owner::OwnerControls id=x.id.clone() published=x.published/> }
    });
    view! {
        <h1 data-testid="experiment-title">{x.title}</h1>
        <p class="muted">{i.t(Key::ExperimentTitle)}" · "{short_utc(&x.created_at)}" · "{i.t(Key::ReadOnly)}</p>
        {owner}
        <h2>{i.t(Key::Estimates)}</h2>
        <dl class="facts" data-testid="experiment-estimates">
            {p.memory.map(|m| {
                let fit = i.t(if m.fits { Key::Fits } else { Key::DoesNotFit });
                view! { <div class="wide"><dt>{i.t(Key::MemoryPerGpu)}</dt>
                    <dd>{format!("{} / {} · {fit}", bytes(m.per_gpu.total_bytes), bytes(m.card_bytes))}</dd></div> }
            })}
            {p.time.map(|t| fact(i, Key::Time, i.duration(t.seconds), ""))}
            {p.cost.map(|c| view! { <div><dt>{i.t(Key::Cost)}</dt>
                <dd>{format!("{} ({} {})", yuan(c.fen), i.t(Key::MaxCost), yuan(c.max_fen))}</dd></div> })}
        </dl>
        {x.job.map(|j| {
            let charged = j.charged_fen.map(jobspec::yuan).unwrap_or_else(|| "—".into());
            view! {
                <h2>{i.t(Key::ResultTitle)}</h2>
                <dl class="facts" data-testid="experiment-result" data-state=j.state.as_str()>
                    {fact(i, Key::State, i.t(j.state.key()).to_string(), "")}
                    {fact(i, Key::Card, format!("{}× {}", j.cards, j.card), "")}
                    {fact(i, Key::Charged, charged, "")}
                    {j.started_at.as_deref().map(|t| fact(i, Key::Started, short_utc(t), ""))}
                    {j.ended_at.as_deref().map(|t| fact(i, Key::Ended, short_utc(t), ""))}
                    {j.message.map(|m| view! { <div class="wide"><dt>{i.t(Key::BackendSays)}</dt><dd>{m}</dd></div> })}
                </dl>
                <h2>{i.t(Key::LossCurve)}</h2>
                <LossChart points=Signal::stored(metrics.clone())/>
            }
        })}
        {(!x.artifacts.is_empty()).then(|| view! {
            <h2>{i.t(Key::JobArtifacts)}</h2>
            <table class="artifacts" data-testid="experiment-artifacts">
                <thead><tr>
                    <th scope="col">{i.t(Key::ArtifactName)}</th>
                    <th scope="col">{i.t(Key::ArtifactSize)}</th>
                    <th scope="col">"sha256"</th>
                </tr></thead>
                <tbody>{crate::pages::job_artifacts::artifact_rows(x.artifacts.clone())}</tbody>
            </table>
        })}
        {results.map(|r| crate::pages::job_results::shown(i, r))}
        {from_artifacts.map(|a| view! { <crate::pages::job_results::RunResultsView artifacts=a/> })}
        <h2>{i.t(Key::SpecTitle)}</h2>
        <pre class="output spec" data-testid="experiment-spec" tabindex="0">{x.spec}</pre>
    }
}
