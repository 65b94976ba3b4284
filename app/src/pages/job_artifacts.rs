//! The job page's artifacts: the files the job pushed to the edge (name, size, sha256), each with
//! its download link, and the account's use of its quota. Asked for when the page opens and
//! again when the job ends (a job pushes what it trained as it finishes).

use crate::api;
use crate::api_wire::Job;
use crate::i18n::Key;
use crate::pages::bits::tr;
use crate::router::Link;
use crate::state::use_i18n;
use ::api::ArtifactList;
use leptos::prelude::*;
use leptos::task::spawn_local;

pub use ::api::human_size as size;

/// A table of artifacts with their download links (the job page's, an experiment's shared ones).
pub fn artifact_rows(artifacts: Vec<::api::Artifact>) -> impl IntoView {
    artifacts
        .into_iter()
        .map(|a| {
            let file = a.name.rsplit('/').next().unwrap_or("artifact").to_string();
            let short: String = a.sha256.chars().take(12).collect();
            view! {
                <tr>
                    <td><a href=a.url download=file data-testid="artifact-link">{a.name}</a></td>
                    <td>{size(a.size)}</td>
                    <td><code title=a.sha256>{short}</code></td>
                </tr>
            }
        })
        .collect_view()
}

/// "Open in playground" for a job whose trained model is a Hugging Face folder the playground
/// reads; for an adapter alone, what to do instead.
fn try_it(list: &ArtifactList) -> Option<AnyView> {
    let i = use_i18n();
    match crate::api_wire::playable("", list) {
        crate::api_wire::Playable::Folder(_) => Some(
            view! {
                <p><Link href=format!("/?model={}", list.job_id) testid="artifacts-playground">{tr(i, Key::OpenInPlayground)}</Link></p>
            }
            .into_any(),
        ),
        crate::api_wire::Playable::AdapterOnly => Some(
            view! { <p class="muted" data-testid="artifacts-adapter-only">{tr(i, Key::ErrAdapterOnly)}</p> }
                .into_any(),
        ),
        crate::api_wire::Playable::Nothing => None,
    }
}

#[component]
pub fn JobArtifacts(id: String, live_job: RwSignal<Option<Job>>) -> impl IntoView {
    let i = use_i18n();
    let list = RwSignal::new(None::<ArtifactList>);
    let ended = Memo::new(move |_| live_job.with(|j| j.as_ref().map(|j| j.state.is_terminal())));
    Effect::new(move |_| {
        let _ = ended.get();
        let path = format!("/api/jobs/{id}/artifacts");
        spawn_local(async move {
            if let Ok(l) = api::get::<ArtifactList>(&path).await {
                let _ = list.try_set(Some(l));
            }
        });
    });
    let rows = move || {
        list.get().map(|l| {
            if l.artifacts.is_empty() && l.uploads.is_empty() {
                return view! { <p class="muted" data-testid="job-artifacts-none">{tr(i, Key::NoArtifactsYet)}</p> }
                    .into_any();
            }
            let used = format!("{} / {}", size(l.used_bytes), size(l.quota_bytes));
            let play = try_it(&l);
            let results = l.artifacts.clone();
            let items = artifact_rows(l.artifacts);
            // Uploads under way: no link yet, and where they are.
            let under_way = l
                .uploads
                .into_iter()
                .map(|u| {
                    view! {
                        <tr data-testid="artifact-uploading">
                            <td>{u.name}</td>
                            <td>{size(u.size)}</td>
                            <td>{tr(i, Key::ArtifactUploading)}" "{u.received}" / "{u.parts}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <table class="artifacts" data-testid="job-artifacts">
                    <thead><tr>
                        <th scope="col">{tr(i, Key::ArtifactName)}</th>
                        <th scope="col">{tr(i, Key::ArtifactSize)}</th>
                        <th scope="col">"sha256"</th>
                    </tr></thead>
                    <tbody>{items}{under_way}</tbody>
                </table>
                {play}
                <p class="muted" data-testid="artifacts-quota">
                    {tr(i, Key::ArtifactsUsed)}" "{used}" · "{tr(i, Key::ArtifactsKeptDays)}" "{l.retention_days}
                </p>
                <crate::pages::job_results::RunResultsView artifacts=results/>
            }
            .into_any()
        })
    };
    view! {
        <h2>{tr(i, Key::JobArtifacts)}</h2>
        {rows}
    }
}
