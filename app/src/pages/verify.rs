//! `/verify?token=…`, where the link of the verification mail lands: posts the token to the
//! edge, then says what happened (the trial credit added, verified before, or why the link does
//! not work) and updates the signed-in account, if this browser has one.

use crate::api;
use crate::api_wire::{ApiError, Verified, token_from_query};
use crate::i18n::Key;
use crate::pages::auth::Refusal;
use crate::pages::bits::{note, tr};
use crate::router::Link;
use crate::session::use_session;
use crate::state::use_i18n;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn VerifyPage() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let token = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|s| token_from_query(&s));
    let outcome = RwSignal::new(None::<Result<Verified, ApiError>>);
    let has_token = token.is_some();
    if let Some(token) = token {
        spawn_local(async move {
            let body = serde_json::json!({ "token": token });
            let r = api::post::<Verified>("/api/auth/verify", &body).await;
            if let Ok(v) = &r {
                session.me.update(|m| {
                    if let Some(m) = m.as_mut().filter(|m| m.email == v.email) {
                        m.email_verified = true;
                        m.balance_fen = v.balance_fen;
                    }
                });
                // This page's first `GET /api/me` may have been answered before the email was
                // verified, or not yet: ask again now that it is.
                session.refresh();
            }
            outcome.set(Some(r));
        });
    }
    view! {
        <section class="page verify" data-testid="page-verify">
            <h1>{tr(i, Key::VerifyTitle)}</h1>
            <div aria-live="polite">
                {move || match outcome.get() {
                    None if !has_token => note(i, Key::NoVerifyToken, "error", "verify-no-token"),
                    None => note(i, Key::Verifying, "muted", "verifying"),
                    Some(Ok(v)) if v.granted_fen > 0 => {
                        let amount = jobspec::yuan(v.granted_fen);
                        view! {
                            <p class="ok" role="status" data-testid="verified" data-granted=v.granted_fen>
                                {move || i.t(Key::VerifiedGranted).replace("{amount}", &amount)}
                            </p>
                        }.into_any()
                    }
                    Some(Ok(_)) => view! {
                        <p class="ok" role="status" data-testid="verified" data-granted="0">
                            {tr(i, Key::VerifiedAlready)}
                        </p>
                    }.into_any(),
                    Some(Err(e)) => view! { <Refusal error=e testid="verify-error"/> }.into_any(),
                }}
            </div>
            <p><Link href="/account" testid="verify-to-account">{tr(i, Key::GoToAccount)}</Link></p>
        </section>
    }
}
