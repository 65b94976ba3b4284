//! `/jobs`: the signed-in user's jobs, newest first, with state, card, backend and cost (what was
//! charged once settled, else the hold), each linking to its page.

use crate::api;
use crate::api_wire::{Job, JobList, StateKey};
use crate::compare::{RunRef, link_of};
use crate::i18n::Key;
use crate::pages::auth::{AuthForm, Refusal};
use crate::pages::bits::{loading, tr};
use crate::router::Link;
use crate::session::use_session;
use crate::state::use_i18n;
use ::api::time::short_utc;
use leptos::prelude::*;

/// "¥0.12" once charged, "held ¥1.00" while the hold stands.
pub fn cost_text(i: crate::state::I18n, job: &Job) -> String {
    match job.charged_fen {
        Some(c) => jobspec::yuan(c),
        None => format!("{} {}", i.t(Key::Held), jobspec::yuan(job.hold_fen)),
    }
}

#[component]
pub fn JobsPage() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    // Read again when the account changes (sign-in on this page), not when its balance does.
    let account = Memo::new(move |_| session.me.with(|m| m.as_ref().map(|m| m.email.clone())));
    let jobs: api::Fetched<JobList> = RwSignal::new(None);
    let picked = RwSignal::new(Vec::<String>::new());
    Effect::new(move |_| {
        account.track();
        api::fetch_into("/api/jobs".into(), jobs);
    });
    view! {
        <section class="page jobs" data-testid="page-jobs">
            <h1>{tr(i, Key::JobsTitle)}</h1>
            {move || match jobs.get() {
                None => loading(i),
                Some(Err(e)) if e.needs_sign_in() => view! { <AuthForm/> }.into_any(),
                Some(Err(e)) => view! { <Refusal error=e testid="jobs-error"/> }.into_any(),
                Some(Ok(list)) if list.jobs.is_empty() => view! {
                    <p class="muted" data-testid="jobs-empty">{i.t(Key::NoJobs)}" "<Link href="/plan">{i.t(Key::NavPlan)}</Link></p>
                }.into_any(),
                Some(Ok(list)) => view! {
                    <CompareSelected picked=picked/>
                    <div class="table-wrap">
                        <table data-testid="jobs">
                            <thead><tr>
                                <th scope="col"><span class="sr-only">{i.t(Key::ComparePick)}</span></th>
                                <th scope="col">{i.t(Key::FieldName)}</th>
                                <th scope="col">{i.t(Key::State)}</th>
                                <th scope="col">{i.t(Key::Card)}</th>
                                <th scope="col">{i.t(Key::Backend)}</th>
                                <th scope="col" class="num">{i.t(Key::Cost)}</th>
                                <th scope="col">{i.t(Key::Created)}</th>
                            </tr></thead>
                            <tbody>
                                {list.jobs.into_iter().map(|j| {
                                    let cost = cost_text(i, &j);
                                    let id = j.id.clone();
                                    let pick = move |ev| {
                                        let on = event_target_checked(&ev);
                                        let id = id.clone();
                                        picked.update(|p| {
                                            p.retain(|x| *x != id);
                                            if on {
                                                p.push(id);
                                            }
                                        });
                                    };
                                    view! {
                                        <tr data-testid="job-row" data-job=j.id.clone() data-state=j.state.as_str()>
                                            <td><input type="checkbox" data-testid="job-pick"
                                                aria-label=format!("{}: {}", i.t(Key::ComparePick), j.name) on:change=pick/></td>
                                            <td><Link href=format!("/jobs/{}", j.id)>{j.name.clone()}</Link></td>
                                            <td><span class=format!("state {}", j.state.as_str())>{i.t(j.state.key())}</span></td>
                                            <td>{format!("{}× {}", j.cards, j.card)}</td>
                                            <td>{j.backend.clone()}</td>
                                            <td class="num">{cost}</td>
                                            <td>{short_utc(&j.created_at)}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any(),
            }}
        </section>
    }
}

/// "Compare selected" once two or more jobs are ticked (their `/compare` link), else the hint.
#[component]
fn CompareSelected(picked: RwSignal<Vec<String>>) -> impl IntoView {
    let i = use_i18n();
    move || {
        let ids = picked.get();
        if ids.len() < 2 {
            return view! { <p class="muted" data-testid="jobs-compare-hint">{i.t(Key::ComparePickHint)}</p> }
                .into_any();
        }
        let refs: Vec<RunRef> = ids.into_iter().map(RunRef::Job).collect();
        view! { <p><Link href=link_of(&refs) testid="jobs-compare">{i.t(Key::CompareSelected)}</Link></p> }
            .into_any()
    }
}
