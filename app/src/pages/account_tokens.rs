//! The account's API tokens on `/account`: each by name, when it was made and its id (never the
//! token), with a button that revokes it at once (a leaked token dies without its holder).

use crate::api;
use crate::api_wire::{ApiError, TokenList, TokenRevoked};
use crate::i18n::Key;
use crate::pages::auth::Refusal;
use crate::pages::bits::{loading, note, tr};
use crate::state::use_i18n;
use ::api::time::short_utc;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn TokensList() -> impl IntoView {
    let i = use_i18n();
    let tokens: api::Fetched<TokenList> = RwSignal::new(None);
    api::fetch_into("/api/tokens".into(), tokens);
    let refused = RwSignal::new(None::<ApiError>);
    let revoke = move |id: String| {
        refused.set(None);
        spawn_local(async move {
            let path = format!("/api/tokens/{id}");
            match api::call("DELETE", &path, None, &[]).await {
                Ok(text) => {
                    let _ = serde_json::from_str::<TokenRevoked>(&text);
                    api::fetch_into("/api/tokens".into(), tokens);
                }
                Err(e) => refused.set(Some(e)),
            }
        });
    };
    view! {
        <h2>{tr(i, Key::TokensTitle)}</h2>
        {move || refused.get().map(|e| view! { <Refusal error=e testid="tokens-error"/> })}
        {move || match tokens.get() {
            None => loading(i),
            Some(Err(e)) => view! { <Refusal error=e testid="tokens-error"/> }.into_any(),
            Some(Ok(l)) if l.tokens.is_empty() => note(i, Key::NoTokens, "muted", "tokens-empty"),
            Some(Ok(l)) => view! {
                <div class="table-wrap">
                    <table data-testid="tokens">
                        <thead><tr>
                            <th scope="col">{i.t(Key::TokenName)}</th>
                            <th scope="col">{i.t(Key::TokenCreatedAt)}</th>
                            <th scope="col">"id"</th>
                            <th scope="col"></th>
                        </tr></thead>
                        <tbody>
                            {l.tokens.into_iter().map(|k| {
                                let id = k.id.clone();
                                view! {
                                    <tr data-token=k.id.clone()>
                                        <td>{k.name}</td>
                                        <td>{short_utc(&k.created_at)}</td>
                                        <td><code>{k.id.clone()}</code></td>
                                        <td>
                                            <button type="button" data-testid="revoke-token"
                                                on:click=move |_| revoke(id.clone())>
                                                {i.t(Key::RevokeToken)}
                                            </button>
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any(),
        }}
    }
}
