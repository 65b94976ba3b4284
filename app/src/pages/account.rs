//! `/account`: sign in or sign up when signed out; else, until the email is verified, a note
//! that the trial credit waits for it (with a button that mails the link again), the balance in
//! yuan, a box to redeem a promotion code (each refusal in its own words, the balance updated
//! on success), the ledger of every credit movement, the account's API tokens
//! (`account_tokens.rs`), and its password and sessions (`account_security.rs`).

use crate::api;
use crate::api_wire::{ApiError, Ledger, Redeemed, VerificationSent, ledger_kind_key};
use crate::i18n::Key;
use crate::pages::auth::{AuthForm, Refusal};
use crate::pages::bits::{loading, note, tr};
use crate::session::use_session;
use crate::state::use_i18n;
use ::api::time::short_utc;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn AccountPage() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    // Only signing in or out changes the page; a new balance must not rebuild it.
    let signed_in = Memo::new(move |_| session.me.with(Option::is_some));
    view! {
        <section class="page account" data-testid="page-account">
            <h1>{tr(i, Key::AccountTitle)}</h1>
            {move || {
                if !session.checked.get() {
                    return loading(i);
                }
                if signed_in.get() {
                    view! { <Credit/> }.into_any()
                } else {
                    view! { <AuthForm/> }.into_any()
                }
            }}
        </section>
    }
}

/// Balance, redeem box and ledger of the signed-in account.
#[component]
fn Credit() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let ledger: api::Fetched<Ledger> = RwSignal::new(None);
    api::fetch_into("/api/ledger".into(), ledger);
    Effect::new(move |_| {
        if let Some(b) = ledger.with(|l| {
            l.as_ref()
                .and_then(|l| l.as_ref().ok())
                .map(|l| l.balance_fen)
        }) {
            session.set_balance(b);
        }
    });
    let balance = move || session.me.get().map(|m| m.balance_fen).unwrap_or(0);
    let unverified = Memo::new(move |_| {
        session.me.with(|m| {
            m.as_ref()
                .filter(|m| !m.email_verified)
                .map(|m| m.email.clone())
        })
    });
    view! {
        {move || unverified.get().map(|email| view! { <VerifyNote email=email/> })}
        <p class="balance">
            {tr(i, Key::Balance)}": "
            <strong data-testid="balance" data-fen=move || balance().to_string()>{move || jobspec::yuan(balance())}</strong>
        </p>
        <Usage/>
        <RedeemBox on_redeemed=move |r: Redeemed| {
            session.set_balance(r.balance_fen);
            // Read the ledger again: it has a new entry.
            api::fetch_into("/api/ledger".into(), ledger);
        }/>
        <h2>{tr(i, Key::LedgerTitle)}</h2>
        {move || match ledger.get() {
            None => loading(i),
            Some(Err(e)) => view! { <Refusal error=e testid="ledger-error"/> }.into_any(),
            Some(Ok(l)) if l.entries.is_empty() => note(i, Key::NoEntries, "muted", "ledger-empty"),
            Some(Ok(l)) => view! {
                <div class="table-wrap">
                    <table data-testid="ledger">
                        <thead><tr>
                            <th scope="col">{i.t(Key::Time)}</th>
                            <th scope="col">{i.t(Key::Kind)}</th>
                            <th scope="col" class="num">{i.t(Key::Amount)}</th>
                            <th scope="col">{i.t(Key::Reference)}</th>
                        </tr></thead>
                        <tbody>
                            {l.entries.into_iter().map(|e| {
                                let kind = i.t(ledger_kind_key(e.kind)).to_string();
                                view! {
                                    <tr data-kind=e.kind.as_str() data-fen=e.amount_fen>
                                        <td>{short_utc(&e.time)}</td>
                                        <td>{kind}</td>
                                        <td class="num">{jobspec::yuan(e.amount_fen)}</td>
                                        <td><code>{e.reference}</code></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any(),
        }}
        <crate::pages::account_tokens::TokensList/>
        <crate::pages::account_security::Security/>
    }
}

/// The trial credit waits for a verified email: say so, and offer to mail the link again.
/// What the account's artifacts and saved experiments take of their limits.
#[component]
fn Usage() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let size = crate::pages::job_artifacts::size;
    view! {
        {move || session.me.get().and_then(|m| m.artifacts).map(|a| {
            view! {
                <p class="muted" data-testid="artifact-usage" data-used=a.used_bytes.to_string()>
                    {tr(i, Key::ArtifactsUsed)}" "{format!("{} / {}", size(a.used_bytes), size(a.quota_bytes))}
                    " · "{tr(i, Key::ArtifactsKeptDays)}" "{a.retention_days}
                </p>
            }
        })}
        {move || session.me.get().and_then(|m| m.experiments).map(|x| {
            view! {
                <p class="muted" data-testid="experiment-usage" data-count=x.count.to_string()>
                    {tr(i, Key::ExperimentsUsed)}" "{format!("{} / {} · {} / {}", x.count, x.max_count, size(x.used_bytes), size(x.quota_bytes))}
                </p>
            }
        })}
    }
}

#[component]
fn VerifyNote(email: String) -> impl IntoView {
    let i = use_i18n();
    let busy = RwSignal::new(false);
    let outcome = RwSignal::new(None::<Result<VerificationSent, ApiError>>);
    let resend = move |_| {
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        outcome.set(None);
        spawn_local(async move {
            let r =
                api::post::<VerificationSent>("/api/auth/verify/resend", &serde_json::json!({}))
                    .await;
            outcome.set(Some(r));
            busy.set(false);
        });
    };
    view! {
        <div class="notice" data-testid="verify-note">
            <p>{move || i.t(Key::VerifyEmailNote).replace("{email}", &email)}</p>
            <button type="button" data-testid="verify-resend" prop:disabled=move || busy.get() on:click=resend>
                {tr(i, Key::ResendLink)}
            </button>
            <div aria-live="polite">
                {move || outcome.get().map(|r| match r {
                    Ok(sent) => {
                        let time = short_utc(&sent.expires_at);
                        view! {
                            <p class="ok" role="status" data-testid="verify-sent">
                                {move || i.t(Key::LinkSent).replace("{email}", &sent.to).replace("{time}", &time)}
                            </p>
                        }.into_any()
                    }
                    Err(e) => view! { <Refusal error=e testid="verify-resend-error"/> }.into_any(),
                })}
            </div>
        </div>
    }
}

#[component]
fn RedeemBox(on_redeemed: impl Fn(Redeemed) + Copy + 'static) -> impl IntoView {
    let i = use_i18n();
    let code = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let outcome = RwSignal::new(None::<Result<Redeemed, ApiError>>);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        outcome.set(None);
        let body = serde_json::json!({"code": code.get_untracked()});
        spawn_local(async move {
            let r = api::post::<Redeemed>("/api/credits/redeem", &body).await;
            if let Ok(ok) = &r {
                on_redeemed(ok.clone());
                code.set(String::new());
            }
            outcome.set(Some(r));
            busy.set(false);
        });
    };
    view! {
        <form class="redeem" novalidate=true data-testid="redeem-form" on:submit=submit>
            <h2><label for="redeem-code">{tr(i, Key::RedeemTitle)}</label></h2>
            <div class="actions">
                <input id="redeem-code" data-testid="redeem-code" autocomplete="off" spellcheck="false"
                    aria-label=tr(i, Key::PromoCode) placeholder=tr(i, Key::PromoCode)
                    prop:value=move || code.get() on:input=move |ev| code.set(event_target_value(&ev))/>
                <button type="submit" class="primary" data-testid="redeem-submit" prop:disabled=move || busy.get()>
                    {tr(i, Key::Redeem)}
                </button>
            </div>
            <div aria-live="polite">
                {move || outcome.get().map(|r| match r {
                    Ok(ok) => view! {
                        <p class="ok" role="status" data-testid="redeem-ok" data-fen=ok.amount_fen>
                            {i.t(Key::RedeemedAmount)}" "{jobspec::yuan(ok.amount_fen)}" · "{i.t(Key::Balance)}" "{jobspec::yuan(ok.balance_fen)}
                        </p>
                    }.into_any(),
                    Err(e) => view! { <Refusal error=e testid="redeem-error"/> }.into_any(),
                })}
            </div>
        </form>
    }
}
