//! `/jobs/:id`: one job, polled while it lives — state (and why it waits), hold and charge,
//! the live loss curve from `metrics?since=`, the log tailed from its offset — with cancel,
//! "save as experiment" (a share link `/e/{id}`) and, for a trained checkpoint, "open in
//! playground". Polling stops when the job ends or the page is left.

use crate::api;
use crate::api_wire::{
    ApiError, Job, JobState, LogChunk, MetricPoint, MetricsPage, SavedExperiment, StateKey,
};
use crate::i18n::Key;
use crate::pages::auth::{AuthForm, Refusal};
use crate::pages::bits::{fact, note, tr};
use crate::pages::loss_chart::LossChart;
use crate::poll::{LogTail, MetricSeries, next_delay_ms};
use crate::router::Link;
use crate::session::use_session;
use crate::state::use_i18n;

/// Metric pages read per poll at most: the edge keeps 50,000 points a job, 5,000 a page (each
/// page after the first begins with the last point of the one before).
const METRIC_PAGES_PER_POLL: usize = 11;
/// Log chunks (64 KiB) read for a finished job: its whole log, of at most 4 MiB.
const FINISHED_LOG_READS: usize = 64;
/// Log chunks read per poll of a live job.
const LIVE_LOG_READS: usize = 4;
use ::api::time::short_utc;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the poll loop writes and the page reads.
#[derive(Clone, Copy)]
struct Live {
    job: RwSignal<Option<Job>>,
    error: RwSignal<Option<ApiError>>,
    points: RwSignal<Vec<MetricPoint>>,
    logs: RwSignal<LogTail>,
}

async fn poll(id: String, live: Live, alive: Arc<AtomicBool>) {
    let on = || alive.load(Ordering::Relaxed);
    let mut failures = 0u32;
    let mut state: Option<JobState> = None;
    let mut series = MetricSeries::default();
    let mut tail = LogTail::default();
    while on() {
        match api::get::<Job>(&format!("/api/jobs/{id}")).await {
            Ok(job) => {
                failures = 0;
                state = Some(job.state);
                live.error.set(None);
                // Set only when it changed: the facts on screen are not rebuilt every poll.
                if live.job.with_untracked(|j| j.as_ref() != Some(&job)) {
                    live.job.set(Some(job));
                }
            }
            Err(e) => {
                failures += 1;
                // Nothing to wait for when the job is not ours or we are signed out.
                let stop = e.status == 404 || e.needs_sign_in();
                live.error.set(Some(e));
                if stop {
                    return;
                }
            }
        }
        if !on() {
            return;
        }
        // Every page of points: a full page means more follow (a finished job is polled once).
        let mut changed = false;
        for _ in 0..METRIC_PAGES_PER_POLL {
            let metrics = format!("/api/jobs/{id}/metrics?since={}", series.since);
            let Ok(page) = api::get::<MetricsPage>(&metrics).await else {
                break;
            };
            let full = page.metrics.len() >= ::api::jobs::METRICS_PAGE_POINTS;
            changed |= series.absorb(page);
            if !full {
                break;
            }
        }
        if changed {
            live.points.set(series.points.clone());
        }
        // A finished job's log is read to its end (the page keeps its last part); a live one a
        // few chunks a poll, so that a log written fast is not left behind.
        let reads = if state.is_some_and(JobState::is_terminal) {
            FINISHED_LOG_READS
        } else {
            LIVE_LOG_READS
        };
        let eof_before = tail.eof;
        let mut grew = false;
        for _ in 0..reads {
            let path = format!("/api/jobs/{id}/logs?offset={}", tail.offset);
            match api::get::<LogChunk>(&path).await {
                Ok(chunk) => {
                    let added = tail.absorb(chunk);
                    grew |= added;
                    if !added || tail.eof {
                        break;
                    }
                }
                // Not dispatched yet, or the backend is briefly away: the next poll asks again.
                Err(_) => break,
            }
        }
        // Set only when it changed: a new log on screen would undo the reader's selection.
        if grew || tail.eof != eof_before {
            live.logs.set(tail.clone());
        }
        match next_delay_ms(state, failures) {
            Some(ms) => api::sleep_ms(ms).await,
            None => return,
        }
    }
}

#[component]
pub fn JobPage(id: String) -> impl IntoView {
    let i = use_i18n();
    let live = Live {
        job: RwSignal::new(None),
        error: RwSignal::new(None),
        points: RwSignal::new(Vec::new()),
        logs: RwSignal::new(LogTail::default()),
    };
    // One poll loop at a time: a new one when the account changes (signing in on this page),
    // and none once the page is left.
    let session = use_session();
    let account = Memo::new(move |_| session.me.with(|m| m.as_ref().map(|m| m.email.clone())));
    let running: Arc<Mutex<Option<Arc<AtomicBool>>>> = Arc::default();
    let stop = {
        let running = running.clone();
        move || {
            if let Ok(mut r) = running.lock()
                && let Some(alive) = r.take()
            {
                alive.store(false, Ordering::Relaxed);
            }
        }
    };
    on_cleanup(stop.clone());
    {
        let id = id.clone();
        Effect::new(move |_| {
            account.track();
            stop();
            let alive = Arc::new(AtomicBool::new(true));
            if let Ok(mut r) = running.lock() {
                *r = Some(alive.clone());
            }
            live.error.set(None);
            spawn_local(poll(id.clone(), live, alive));
        });
    }

    view! {
        <section class="page job" data-testid="page-job" data-id=id.clone()
            data-state=move || live.job.get().map(|j| j.state.as_str())>
            <h1>{tr(i, Key::JobTitle)}" "{move || live.job.get().map(|j| j.name)}</h1>
            {move || live.error.get().map(|e| {
                if e.needs_sign_in() {
                    view! { <AuthForm/> }.into_any()
                } else if e.status == 404 {
                    note(i, Key::UnknownJob, "error", "job-unknown")
                } else {
                    view! { <Refusal error=e testid="job-error"/> }.into_any()
                }
            })}
            {move || { i.lang.track(); live.job.get().map(|j| view! { <JobFacts job=j/> }) }}
            <JobProgress job=live.job points=live.points/>
            <JobActions id=id.clone() live_job=live.job/>
            <crate::pages::job_notify::NotifyToggle live_job=live.job/>
            <h2>{tr(i, Key::LossCurve)}</h2>
            <LossChart points=live.points/>
            <crate::pages::job_artifacts::JobArtifacts id=id.clone() live_job=live.job/>
            <h2>{tr(i, Key::Logs)}</h2>
            {move || live.logs.with(|l| l.truncated).then(|| view! { <p class="muted">{i.t(Key::LogTruncated)}</p> })}
            <pre class="output logs" data-testid="job-logs" data-offset=move || live.logs.with(|l| l.offset) tabindex="0"
                aria-label=tr(i, Key::Logs)>
                <LogText live=live/>
            </pre>
        </section>
    }
}

/// The log read so far, with a line where each attempt after the first begins (a job its
/// cluster stopped and ran again).
#[component]
fn LogText(live: Live) -> impl IntoView {
    let i = use_i18n();
    let attempts = Memo::new(move |_| {
        live.job
            .with(|j| j.as_ref().map(|j| j.attempts.clone()).unwrap_or_default())
    });
    move || {
        let pieces = live
            .logs
            .with(|l| attempts.with(|a| crate::poll::log_by_attempt(&l.text, l.offset, a)));
        if pieces.is_empty() {
            return i.t(Key::NoLogsYet).to_string().into_any();
        }
        pieces
            .into_iter()
            .map(|(mark, text)| {
                let mark = mark.map(|n| {
                    let words = i.t(Key::AttemptBegins).replace("{n}", &(n + 1).to_string());
                    view! { <strong class="attempt-mark" data-testid="job-log-attempt" data-attempt=n>{words}"\n"</strong> }
                });
                view! { {mark}{text} }
            })
            .collect_view()
            .into_any()
    }
}

/// Step of total, the time left and tokens/s while a job runs (and where it got to once it ended).
#[component]
fn JobProgress(job: RwSignal<Option<Job>>, points: RwSignal<Vec<MetricPoint>>) -> impl IntoView {
    let i = use_i18n();
    // The spec's step count, parsed once per spec rather than once per poll.
    let total = Memo::new(move |_| {
        job.with(|j| {
            j.as_ref()
                .and_then(|j| jobspec::plan_toml(&j.spec).valid.map(|v| v.steps()))
        })
    });
    let now = Memo::new(move |_| {
        let total = total.get()?;
        points.with(|p| crate::progress::progress(p, total))
    });
    move || {
        let p = now.get()?;
        let running = job.with(|j| j.as_ref().is_some_and(|j| !j.state.is_terminal()));
        let steps = i
            .t(Key::StepOfTotal)
            .replace("{step}", &p.step.to_string())
            .replace("{total}", &p.total_steps.to_string());
        let eta = p.eta_s.filter(|_| running).map(|s| i.duration(s));
        let tps = p
            .tokens_per_s
            .map(|t| format!("{t:.0} {}", i.t(Key::TokensPerSecond)));
        let percent = (p.fraction * 100.0).round();
        Some(view! {
            <div class="progress" data-testid="job-progress" data-step=p.step data-total=p.total_steps>
                <label>
                    <span>{i.t(Key::ProgressLabel)}": "{steps.clone()}" ("{percent}"%)"</span>
                    <progress max=p.total_steps value=p.step aria-valuetext=steps></progress>
                </label>
                <dl class="facts">
                    {eta.map(|e| fact(i, Key::TimeLeft, e, "job-eta"))}
                    {tps.map(|t| fact(i, Key::Throughput, t, "job-tokens-per-s"))}
                </dl>
            </div>
        })
    }
}

/// State, why it waits, and the money.
#[component]
fn JobFacts(job: Job) -> impl IntoView {
    let i = use_i18n();
    let reason_key = if matches!(job.state, JobState::Queued | JobState::Requeued) {
        Key::WaitingReason
    } else {
        Key::BackendSays
    };
    let charged = job
        .charged_fen
        .map(jobspec::yuan)
        .unwrap_or_else(|| "—".into());
    view! {
        <dl class="facts">
            <div><dt>{i.t(Key::State)}</dt>
                <dd><span class=format!("state {}", job.state.as_str()) data-testid="job-state" data-state=job.state.as_str()>{i.t(job.state.key())}</span></dd></div>
            {crate::api_wire::job_message(&job, i.lang.get_untracked()).map(|m| view! {
                <div class="wide"><dt>{i.t(reason_key)}</dt><dd data-testid="job-message">{m}</dd></div>
            })}
            <div><dt>{i.t(Key::Held)}</dt><dd data-testid="job-hold" data-fen=job.hold_fen>{jobspec::yuan(job.hold_fen)}</dd></div>
            {fact(i, Key::Charged, charged, "job-charged")}
            {fact(i, Key::Card, format!("{}× {}", job.cards, job.card), "")}
            {fact(i, Key::Backend, job.backend.clone(), "job-backend")}
            {fact(i, Key::Created, short_utc(&job.created_at), "")}
            {job.started_at.as_deref().map(|t| fact(i, Key::Started, short_utc(t), ""))}
            {job.ended_at.as_deref().map(|t| fact(i, Key::Ended, short_utc(t), ""))}
            {(job.attempts.len() > 1).then(|| fact(i, Key::Attempts, job.attempts.len().to_string(), "job-attempts"))}
        </dl>
    }
}

/// What "save as experiment" sends: a finished job's snapshot carries its result and metrics
/// (and its artifacts, when `share` says so); a running one's only the plan.
fn snapshot_body(job: &Job, share: bool) -> serde_json::Value {
    if job.state.is_terminal() {
        serde_json::json!({"spec": job.spec, "job_id": job.id, "share_artifacts": share})
    } else {
        serde_json::json!({"spec": job.spec})
    }
}

/// "Share its artifacts with the link", next to "save as experiment" once the job has ended:
/// off unless the owner ticks it; the link then lets whoever sees it download the artifacts.
#[component]
fn ShareArtifacts(checked: RwSignal<bool>, terminal: Memo<Option<bool>>) -> impl IntoView {
    let i = use_i18n();
    move || {
        (terminal.get() == Some(true)).then(|| {
            view! {
                <label class="check">
                    <input type="checkbox" data-testid="job-share-artifacts"
                        prop:checked=move || checked.get()
                        on:change=move |ev| checked.set(event_target_checked(&ev))/>
                    " "{tr(i, Key::ShareArtifacts)}
                </label>
            }
        })
    }
}

/// Cancel, save as experiment, open in playground. Rendered once: the buttons change only when
/// the job's state does, so a poll never takes the keyboard focus away.
#[component]
fn JobActions(id: String, live_job: RwSignal<Option<Job>>) -> impl IntoView {
    let i = use_i18n();
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<ApiError>);
    let saved = RwSignal::new(None::<SavedExperiment>);
    let terminal = Memo::new(move |_| live_job.with(|j| j.as_ref().map(|j| j.state.is_terminal())));
    let playground = Memo::new(move |_| {
        live_job.with(|j| {
            j.as_ref()
                .filter(|j| j.state == JobState::Succeeded && j.checkpoint)
                .map(|j| format!("/?model={}", j.id))
        })
    });
    let cancel_path = format!("/api/jobs/{id}/cancel");
    let cancel = move |_| {
        let path = cancel_path.clone();
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            match api::post::<Job>(&path, &serde_json::json!({})).await {
                Ok(j) => live_job.set(Some(j)),
                Err(e) => error.set(Some(e)),
            }
            busy.set(false);
        });
    };
    let share_artifacts = RwSignal::new(false);
    let save = move |_| {
        let Some(job) = live_job.get_untracked() else {
            return;
        };
        let body = snapshot_body(&job, share_artifacts.get_untracked());
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            match api::post::<SavedExperiment>("/api/experiments", &body).await {
                Ok(s) => saved.set(Some(s)),
                Err(e) => error.set(Some(e)),
            }
            busy.set(false);
        });
    };
    view! {
        <div class="actions">
            {move || (terminal.get() == Some(false)).then(|| {
                let cancel = cancel.clone();
                view! {
                    <button type="button" data-testid="job-cancel" prop:disabled=move || busy.get() on:click=cancel>
                        {tr(i, Key::CancelJob)}
                    </button>
                }
            })}
            <button type="button" data-testid="job-save" prop:disabled=move || busy.get() || terminal.get().is_none() on:click=save>
                {tr(i, Key::SaveExperiment)}
            </button>
            <ShareArtifacts checked=share_artifacts terminal=terminal/>
            {move || playground.get().map(|href| view! {
                <Link href=href testid="job-playground">{tr(i, Key::OpenInPlayground)}</Link>
            })}
        </div>
        <div aria-live="polite">
            {move || error.get().map(|e| view! { <Refusal error=e testid="job-action-error"/> })}
            {move || saved.get().map(|s| {
                let url = api::absolute(&s.url);
                view! {
                    <p class="share-link" role="status" data-testid="job-saved" data-id=s.id.clone()>
                        <span>{i.t(Key::ExperimentSaved)}</span>
                        <input readonly=true aria-label=i.t(Key::ShareLink) prop:value=url/>
                        <Link href=s.url.clone() testid="job-saved-link">{s.url.clone()}</Link>
                    </p>
                }
            })}
        </div>
    }
}
