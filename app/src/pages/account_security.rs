//! The signed-in account's password and sessions on `/account`: change the password knowing the
//! current one (every other session is signed out, this one stays), and sign out everywhere,
//! with the account's API tokens too on request.

use crate::api;
use crate::api_wire::{ApiError, PasswordChanged, SignedOutEverywhere};
use crate::i18n::Key;
use crate::pages::auth::Refusal;
use crate::pages::bits::tr;
use crate::router::use_router;
use crate::session::use_session;
use crate::state::use_i18n;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn Security() -> impl IntoView {
    let i = use_i18n();
    view! {
        <h2>{tr(i, Key::SecurityTitle)}</h2>
        <ChangePassword/>
        <SignOutEverywhere/>
    }
}

#[component]
fn ChangePassword() -> impl IntoView {
    let i = use_i18n();
    let current = RwSignal::new(String::new());
    let new = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let outcome = RwSignal::new(None::<Result<PasswordChanged, ApiError>>);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        outcome.set(None);
        let body = serde_json::json!({
            "current_password": current.get_untracked(),
            "new_password": new.get_untracked(),
        });
        spawn_local(async move {
            let r = api::post::<PasswordChanged>("/api/auth/password", &body).await;
            if r.is_ok() {
                current.set(String::new());
                new.set(String::new());
            }
            outcome.set(Some(r));
            busy.set(false);
        });
    };
    view! {
        <form class="auth" novalidate=true data-testid="password-form" on:submit=submit>
            <label class="field" for="current-password">
                <span>{tr(i, Key::CurrentPassword)}</span>
                <input id="current-password" data-testid="current-password" type="password"
                    required=true autocomplete="current-password"
                    prop:value=move || current.get() on:input=move |ev| current.set(event_target_value(&ev))/>
            </label>
            <label class="field" for="new-password">
                <span>{tr(i, Key::NewPassword)}</span>
                <input id="new-password" data-testid="new-password" type="password"
                    required=true autocomplete="new-password" aria-describedby="new-password-hint"
                    prop:value=move || new.get() on:input=move |ev| new.set(event_target_value(&ev))/>
                <span id="new-password-hint" class="muted">{tr(i, Key::PasswordHint)}</span>
            </label>
            <button type="submit" data-testid="password-submit" prop:disabled=move || busy.get()>
                {tr(i, Key::ChangePassword)}
            </button>
            <div aria-live="polite">
                {move || outcome.get().map(|r| match r {
                    Ok(done) => view! {
                        <p class="ok" role="status" data-testid="password-changed"
                            data-signed-out=done.signed_out_sessions.to_string()>
                            {move || i.t(Key::PasswordChangedNote)
                                .replace("{n}", &done.signed_out_sessions.to_string())}
                        </p>
                    }.into_any(),
                    Err(e) => view! { <Refusal error=e testid="password-error"/> }.into_any(),
                })}
            </div>
        </form>
    }
}

#[component]
fn SignOutEverywhere() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let router = use_router();
    let revoke_tokens = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let refused = RwSignal::new(None::<ApiError>);
    let go = move |_| {
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        refused.set(None);
        let body = serde_json::json!({ "revoke_tokens": revoke_tokens.get_untracked() });
        spawn_local(async move {
            match api::post::<SignedOutEverywhere>("/api/auth/logout/everywhere", &body).await {
                Ok(_) => {
                    session.me.set(None);
                    router.navigate("/account");
                }
                Err(e) => refused.set(Some(e)),
            }
            busy.set(false);
        });
    };
    view! {
        <div class="sign-out-everywhere" data-testid="sign-out-everywhere-box">
            <p class="muted">{tr(i, Key::SignOutEverywhereHint)}</p>
            <label class="check">
                <input type="checkbox" data-testid="revoke-tokens-too"
                    prop:checked=move || revoke_tokens.get()
                    on:change=move |ev| revoke_tokens.set(event_target_checked(&ev))/>
                " "{tr(i, Key::AlsoRevokeTokens)}
            </label>
            <button type="button" data-testid="sign-out-everywhere" prop:disabled=move || busy.get() on:click=go>
                {tr(i, Key::SignOutEverywhere)}
            </button>
            {move || refused.get().map(|e| view! { <Refusal error=e testid="sign-out-everywhere-error"/> })}
        </div>
    }
}
