//! The Plan page's "Submit job": the backend to run on (from `GET /api/backends`, written into
//! the spec's `backend` key so the TOML stays the one source of truth), the hold the edge will
//! place, and `POST /api/jobs` with an Idempotency-Key that a retry of the same spec reuses.
//! On success it opens the job's page; every refusal is said in the user's words.

use crate::api;
use crate::api_wire::{ApiError, BackendList, Job};
use crate::i18n::Key;
use crate::pages::auth::Refusal;
use crate::pages::bits::tr;
use crate::poll::Submission;
use crate::router::{Link, use_router};
use crate::session::use_session;
use crate::state::{use_i18n, use_shared};
use jobspec::Plan;
use jobspec::patch::PatchOp;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The spec's `backend` key as written (`auto` when absent).
fn spec_backend(plan: &Plan) -> &'static str {
    use jobspec::spec::Backend as B;
    match plan.valid.as_ref().map(|v| &v.spec().backend) {
        Some(B::Runner) => "runner",
        Some(B::Slurm) => "slurm",
        _ => "auto",
    }
}

#[component]
pub fn SubmitPanel(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let session = use_session();
    let router = use_router();
    let backends: api::Fetched<BackendList> = RwSignal::new(None);
    api::fetch_into("/api/backends".into(), backends);
    let pending = StoredValue::new(None::<Submission>);
    let busy = RwSignal::new(false);
    let outcome = RwSignal::new(None::<Result<Job, ApiError>>);

    let submit = move |_| {
        if busy.get_untracked() {
            return;
        }
        let text = spec.get_untracked();
        let sub = Submission::for_spec(pending.get_value().as_ref(), &text, api::random_key);
        pending.set_value(Some(sub.clone()));
        busy.set(true);
        outcome.set(None);
        spawn_local(async move {
            let answer = post_job(&sub).await;
            busy.set(false);
            match answer {
                Ok(job) => {
                    // Done: the next submission, even of the same spec, is a new job.
                    pending.set_value(None);
                    session.refresh();
                    let href = format!("/jobs/{}", job.id);
                    outcome.set(Some(Ok(job)));
                    router.navigate(&href);
                }
                Err(e) => outcome.set(Some(Err(e))),
            }
        });
    };

    view! {
        <section class="submit" data-testid="submit-panel" aria-labelledby="submit-title">
            <h2 id="submit-title">{tr(i, Key::SubmitTitle)}</h2>
            {move || plan.with(|p| p.valid.as_ref().filter(|_| p.is_submittable()).map(|v| {
                let hold = v.max_cost_fen();
                view! {
                    <p data-testid="submit-hold" data-fen=hold>
                        {i.t(Key::MaxHold)}": "<strong>{jobspec::yuan(hold)}</strong>
                    </p>
                }
            }))}
            <BackendChoice plan backends/>
            <div class="actions">
                <button type="button" class="primary" data-testid="submit-job"
                    prop:disabled=move || busy.get() || !plan.with(Plan::is_submittable)
                    on:click=submit>
                    {tr(i, Key::SubmitJob)}
                </button>
                {move || (session.checked.get() && session.me.get().is_none()).then(|| view! {
                    <span class="muted">{i.t(Key::SignInToSubmit)}" "<Link href="/account">{i.t(Key::SignIn)}</Link></span>
                })}
            </div>
            <SubmitOutcome outcome/>
        </section>
    }
}

/// `POST /api/jobs` with the submission's spec and idempotency key.
async fn post_job(sub: &Submission) -> Result<Job, ApiError> {
    api::call(
        "POST",
        "/api/jobs",
        Some(("application/toml", sub.spec.clone())),
        &[("idempotency-key", &sub.key)],
    )
    .await
    .and_then(|body| {
        serde_json::from_str::<Job>(&body)
            .map_err(|e| ApiError::from_answer(200, &format!("unreadable job: {e}")))
    })
}

/// The backends that have the spec's cards, in the edge's order; choosing one writes it into
/// the spec's `backend`.
#[component]
fn BackendChoice(plan: Memo<Plan>, backends: api::Fetched<BackendList>) -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    // The backends that have this spec's cards, in the edge's order.
    let offering = move || {
        let (card, cards) = plan.with(|p| {
            p.valid
                .as_ref()
                .map(|v| (v.card().id.to_string(), v.world_size()))
                .unwrap_or_default()
        });
        match backends.get() {
            Some(Ok(list)) => list.offering(&card, cards),
            _ => Vec::new(),
        }
    };
    let choose = move |kind: String| {
        let op = PatchOp {
            path: "backend".into(),
            value: serde_json::Value::String(kind),
        };
        if let Some(t) = jobspec::patch::apply_patch_toml(&spec.get_untracked(), &[op]) {
            spec.set(t);
        }
    };
    view! {
        <label class="field" for="submit-backend">
            <span>{tr(i, Key::Backend)}</span>
            <select id="submit-backend" data-testid="submit-backend"
                on:change=move |ev| choose(event_target_value(&ev))>
                {move || {
                    let list = offering();
                    let wanted = plan.with(spec_backend);
                    // `auto` runs on the first backend that fits: show that one as chosen.
                    let chosen = list.iter().position(|b| b.kind.as_str() == wanted).unwrap_or(0);
                    list.into_iter().enumerate().map(|(n, b)| {
                        let cards: Vec<String> = b.cards.iter().map(|(c, k)| format!("{k}× {c}")).collect();
                        view! {
                            <option value=b.kind.as_str() selected=n == chosen data-name=b.name.clone()>
                                {format!("{} ({}, {})", b.name, b.kind.as_str(), cards.join(", "))}
                            </option>
                        }
                    }).collect_view()
                }}
            </select>
        </label>
        {move || (matches!(backends.get(), Some(Ok(_))) && offering().is_empty() && plan.with(|p| p.valid.is_some())).then(|| view! {
            <p class="muted" data-testid="submit-no-backend">{i.t(Key::NoBackendForCard)}</p>
        })}
    }
}

/// What the last submission came to: the job (while its page opens) or the refusal.
#[component]
fn SubmitOutcome(outcome: RwSignal<Option<Result<Job, ApiError>>>) -> impl IntoView {
    let i = use_i18n();
    view! {
        <div aria-live="polite">
            {move || outcome.get().map(|r| match r {
                Ok(job) => view! {
                    <p role="status" data-testid="submit-ok" data-job=job.id.clone()>
                        {i.t(Key::Held)}" "{jobspec::yuan(job.hold_fen)}" · "{i.t(Key::OpeningJob)}
                    </p>
                }.into_any(),
                Err(e) => {
                    let sign_in = e.needs_sign_in();
                    view! {
                        <Refusal error=e testid="submit-error"/>
                        {sign_in.then(|| view! { <Link href="/account" testid="submit-sign-in">{i.t(Key::SignIn)}</Link> })}
                    }.into_any()
                }
            })}
        </div>
    }
}
