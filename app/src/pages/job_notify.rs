//! "Notify me when this job ends": a system notification (the browser's Notification API) when a
//! job watched on its page reaches a final state. The browser is asked for permission only when
//! the user ticks the box, never on its own.

use crate::api_wire::{Job, StateKey};
use crate::browser::{notification_permission, notify, request_notification_permission};
use crate::i18n::Key;
use crate::state::use_i18n;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The box, while the job lives, and the notification when it ends.
#[component]
pub fn NotifyToggle(live_job: RwSignal<Option<Job>>) -> impl IntoView {
    let i = use_i18n();
    // Without the API (some mobile browsers) there is nothing to offer.
    let supported = notification_permission().is_some();
    let on = RwSignal::new(false);
    let blocked = RwSignal::new(notification_permission().as_deref() == Some("denied"));
    let sent = RwSignal::new(None::<bool>);
    let terminal = Memo::new(move |_| live_job.with(|j| j.as_ref().map(|j| j.state.is_terminal())));
    let toggle = move |ev| {
        if !event_target_checked(&ev) {
            on.set(false);
            return;
        }
        if notification_permission().as_deref() == Some("granted") {
            on.set(true);
            return;
        }
        // The browser shows its prompt because this runs from the user's click.
        spawn_local(async move {
            let granted = request_notification_permission().await.as_deref() == Some("granted");
            let _ = on.try_set(granted);
            let _ = blocked.try_set(!granted);
        });
    };
    // Only an end seen on this page notifies: a job that had ended before it opened does not.
    Effect::new(move |before: Option<Option<bool>>| {
        let now = terminal.get();
        if on.get_untracked()
            && before == Some(Some(false))
            && now == Some(true)
            && let Some(job) = live_job.get_untracked()
        {
            let title = i.t(Key::NotifyTitle).replace("{name}", &job.name);
            let body = i.t(job.state.key());
            sent.set(Some(notify(
                &title,
                body,
                &format!("onramp-job-{}", job.id),
            )));
        }
        now
    });
    view! {
        {move || (supported && terminal.get() == Some(false)).then(|| view! {
            <label class="notify">
                <input type="checkbox" data-testid="job-notify" prop:checked=move || on.get()
                    prop:disabled=move || blocked.get() on:change=toggle/>
                {move || i.t(Key::NotifyMe)}
            </label>
        })}
        <p class="muted notify-status" role="status" data-testid="job-notify-status"
            data-sent=move || sent.get().map(|s| s.to_string())>
            {move || {
                if blocked.get() {
                    Some(i.t(Key::NotifyBlocked))
                } else {
                    sent.get().map(|s| i.t(if s { Key::NotifySent } else { Key::NotifyFailed }))
                }
            }}
        </p>
    }
}
