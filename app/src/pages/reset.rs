//! `/reset?token=…`, where the link of the password reset mail lands (the sign-in form asks for
//! one, `auth.rs`): a new password, which signs this browser in and every other session and API
//! token of the account out.

use crate::api;
use crate::api_wire::{ApiError, Me, token_from_query};
use crate::i18n::Key;
use crate::pages::auth::Refusal;
use crate::pages::bits::{note, tr};
use crate::router::Link;
use crate::session::use_session;
use crate::state::use_i18n;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn ResetPage() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let token = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|s| token_from_query(&s));
    let password = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let outcome = RwSignal::new(None::<Result<Me, ApiError>>);
    let has_token = token.is_some();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(token) = token.clone() else { return };
        busy.set(true);
        let body = serde_json::json!({ "token": token, "password": password.get_untracked() });
        spawn_local(async move {
            let r = api::post::<Me>("/api/auth/reset", &body).await;
            if let Ok(me) = &r {
                password.set(String::new());
                session.me.set(Some(me.clone()));
            }
            outcome.set(Some(r));
            busy.set(false);
        });
    };
    view! {
        <section class="page reset" data-testid="page-reset">
            <h1>{tr(i, Key::ResetTitle)}</h1>
            {move || match outcome.get() {
                Some(Ok(_)) => view! {
                    <p class="ok" role="status" data-testid="reset-done">{tr(i, Key::ResetDone)}</p>
                    <p><Link href="/account" testid="reset-to-account">{tr(i, Key::GoToAccount)}</Link></p>
                }.into_any(),
                _ if !has_token => note(i, Key::NoResetToken, "error", "reset-no-token"),
                other => view! {
                    <form class="auth" novalidate=true data-testid="reset-form" on:submit=submit.clone()>
                        <label class="field" for="reset-password">
                            <span>{tr(i, Key::NewPassword)}</span>
                            <input id="reset-password" data-testid="reset-password" type="password"
                                required=true autocomplete="new-password" aria-describedby="reset-password-hint"
                                prop:value=move || password.get()
                                on:input=move |ev| password.set(event_target_value(&ev))/>
                            <span id="reset-password-hint" class="muted">{tr(i, Key::PasswordHint)}</span>
                        </label>
                        <button type="submit" class="primary" data-testid="reset-submit" prop:disabled=move || busy.get()>
                            {tr(i, Key::ResetSubmit)}
                        </button>
                        <div aria-live="polite">
                            {other.and_then(Result::err).map(|e| view! { <Refusal error=e testid="reset-error"/> })}
                        </div>
                    </form>
                }.into_any(),
            }}
        </section>
    }
}
