//! Sign-in and sign-up: one form with two modes, the edge's refusal shown in the user's words
//! (bad email, weak password, taken email, wrong password, rate limited) with its own detail,
//! and in sign-in mode the request for a password reset link (its answer is the same whether or
//! not the email has an account).

use crate::api;
use crate::api_wire::{ApiError, Me, ResetRequested};
use crate::i18n::Key;
use crate::pages::bits::tr;
use crate::session::use_session;
use crate::state::use_i18n;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// A refusal as the pages show it: the message for its code, then the edge's own words.
#[component]
pub fn Refusal(error: ApiError, #[prop(optional)] testid: &'static str) -> impl IntoView {
    let i = use_i18n();
    let testid = if testid.is_empty() { "refusal" } else { testid };
    let key = error.key();
    // The real wait, in words ("Try again in 49 min."), never "a moment" next to a number.
    let retry = error.retry_after_s().map(|s| {
        move || {
            let wait = crate::i18n::wait_text(s, i.lang.get());
            format!(" {}", i.t(Key::TryAgainIn).replace("{wait}", &wait))
        }
    });
    let problems = {
        let error = error.clone();
        move || error.spec_problems(i.lang.get())
    };
    view! {
        <div class="error" role="alert" data-testid=testid data-code=error.code.clone() data-status=error.status>
            <strong>{move || i.t(key)}</strong>
            <span data-testid="retry-after">{retry}</span>
            " "
            <span class="muted detail">{error.message.clone()}</span>
            {move || {
                let problems = problems();
                (!problems.is_empty()).then(|| view! {
                    <ul>{problems.into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}</ul>
                })
            }}
        </div>
    }
}

#[component]
pub fn AuthForm() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let signing_up = RwSignal::new(false);
    let email = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<ApiError>);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        let path = if signing_up.get_untracked() {
            "/api/auth/signup"
        } else {
            "/api/auth/login"
        };
        let body = serde_json::json!({"email": email.get_untracked(), "password": password.get_untracked()});
        spawn_local(async move {
            match api::post::<Me>(path, &body).await {
                Ok(me) => {
                    password.set(String::new());
                    session.me.set(Some(me));
                }
                Err(e) => error.set(Some(e)),
            }
            busy.set(false);
        });
    };
    view! {
        <form class="auth" novalidate=true data-testid="auth-form" data-mode=move || if signing_up.get() { "signup" } else { "login" }
            on:submit=submit>
            <h2>{move || i.t(if signing_up.get() { Key::SignUpTitle } else { Key::SignInTitle })}</h2>
            <label class="field" for="auth-email">
                <span>{tr(i, Key::Email)}</span>
                <input id="auth-email" data-testid="auth-email" type="email" required=true
                    autocomplete="email" inputmode="email"
                    prop:value=move || email.get()
                    on:input=move |ev| email.set(event_target_value(&ev))/>
            </label>
            <label class="field" for="auth-password">
                <span>{tr(i, Key::Password)}</span>
                <input id="auth-password" data-testid="auth-password" type="password" required=true
                    aria-describedby="auth-password-hint"
                    autocomplete=move || if signing_up.get() { "new-password" } else { "current-password" }
                    prop:value=move || password.get()
                    on:input=move |ev| password.set(event_target_value(&ev))/>
                <span id="auth-password-hint" class="muted">{tr(i, Key::PasswordHint)}</span>
            </label>
            {move || signing_up.get().then(|| view! { <p class="muted">{i.t(Key::SignUpGrant)}</p> })}
            {move || (!signing_up.get()).then(|| view! {
                <details class="forgot-box" data-testid="forgot-toggle">
                    <summary>{i.t(Key::ForgotPassword)}</summary>
                    <ForgotPassword email=email/>
                </details>
            })}
            <div class="actions">
                <button type="submit" class="primary" data-testid="auth-submit" prop:disabled=move || busy.get()>
                    {move || i.t(if signing_up.get() { Key::SignUp } else { Key::SignIn })}
                </button>
                <button type="button" data-testid="auth-switch" on:click=move |_| {
                    signing_up.update(|s| *s = !*s);
                    error.set(None);
                }>
                    {move || i.t(if signing_up.get() { Key::SignInInstead } else { Key::SignUpInstead })}
                </button>
            </div>
            <div aria-live="polite">
                {move || error.get().map(|e| view! { <Refusal error=e testid="auth-error"/> })}
            </div>
        </form>
    }
}

/// Asks for a reset link for `email` (the sign-in form's field, which this form shares).
#[component]
pub fn ForgotPassword(email: RwSignal<String>) -> impl IntoView {
    let i = use_i18n();
    let sent = RwSignal::new(None::<Result<ResetRequested, ApiError>>);
    let busy = RwSignal::new(false);
    let ask = move |_| {
        busy.set(true);
        let body = serde_json::json!({ "email": email.get_untracked() });
        spawn_local(async move {
            sent.set(Some(
                api::post::<ResetRequested>("/api/auth/reset/request", &body).await,
            ));
            busy.set(false);
        });
    };
    view! {
        <div class="forgot" data-testid="forgot">
            <p class="muted">{tr(i, Key::ForgotHint)}</p>
            <button type="button" data-testid="forgot-send" prop:disabled=move || busy.get() on:click=ask>
                {tr(i, Key::ForgotSend)}
            </button>
            <div aria-live="polite">
                {move || match sent.get() {
                    None => ().into_any(),
                    Some(Ok(r)) => view! {
                        <p class="ok" role="status" data-testid="forgot-sent">
                            {move || i.t(Key::ForgotSent).replace("{email}", &r.to)}
                        </p>
                    }.into_any(),
                    Some(Err(e)) => view! { <Refusal error=e testid="forgot-error"/> }.into_any(),
                }}
            </div>
        </div>
    }
}
