//! What the owner of a saved experiment may do on its page: see whether its link is public,
//! take the link back or publish it again, and delete the snapshot (after a second click).
//! Nobody else sees these controls, and the edge refuses them to anyone else.

use crate::api;
use crate::api_wire::{ApiError, ExperimentDeleted, SavedExperiment};
use crate::i18n::Key;
use crate::pages::auth::Refusal;
use crate::pages::bits::note;
use crate::state::use_i18n;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn OwnerControls(id: String, published: bool) -> impl IntoView {
    let i = use_i18n();
    let published = RwSignal::new(published);
    let deleted = RwSignal::new(false);
    let confirming = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let refused = RwSignal::new(None::<ApiError>);
    let path = format!("/api/experiments/{id}");
    let toggle = {
        let path = path.clone();
        move |_| {
            let path = path.clone();
            let want = !published.get_untracked();
            busy.set(true);
            refused.set(None);
            spawn_local(async move {
                let body = serde_json::json!({ "published": want }).to_string();
                let answer = api::call("PATCH", &path, Some(("application/json", body)), &[]).await;
                match answer.map(|t| serde_json::from_str::<SavedExperiment>(&t)) {
                    Ok(Ok(saved)) => published.set(saved.published),
                    Ok(Err(_)) => published.set(want),
                    Err(e) => refused.set(Some(e)),
                }
                busy.set(false);
            });
        }
    };
    let delete = move |_| {
        if !confirming.get_untracked() {
            confirming.set(true);
            return;
        }
        let path = path.clone();
        busy.set(true);
        refused.set(None);
        spawn_local(async move {
            match api::call("DELETE", &path, None, &[]).await {
                Ok(text) => {
                    let _ = serde_json::from_str::<ExperimentDeleted>(&text);
                    deleted.set(true);
                }
                Err(e) => refused.set(Some(e)),
            }
            busy.set(false);
        });
    };
    view! {
        <div class="owner" data-testid="experiment-owner"
            data-published=move || published.get().to_string() data-deleted=move || deleted.get().to_string()>
            {move || refused.get().map(|e| view! { <Refusal error=e testid="experiment-owner-error"/> })}
            {move || if deleted.get() {
                note(i, Key::ExperimentDeletedNote, "ok", "experiment-deleted")
            } else {
                let (state, action) = if published.get() {
                    (Key::ExperimentIsPublic, Key::ExperimentUnpublish)
                } else {
                    (Key::ExperimentIsPrivate, Key::ExperimentPublish)
                };
                let remove = if confirming.get() { Key::ExperimentDeleteConfirm } else { Key::ExperimentDelete };
                view! {
                    <p class="muted" data-testid="experiment-visibility">{i.t(state)}</p>
                    <button type="button" data-testid="experiment-publish" disabled=move || busy.get()
                        on:click=toggle.clone()>{i.t(action)}</button>
                    " "
                    <button type="button" class="danger" data-testid="experiment-delete" disabled=move || busy.get()
                        on:click=delete.clone()>{i.t(remove)}</button>
                }.into_any()
            }}
        </div>
    }
}
