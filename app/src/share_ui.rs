//! Share links: "Copy link" puts the spec and the playground settings into the URL fragment
//! (jobspec's versioned codec); opening such a link restores exactly that, and a link that
//! cannot be read says why and loads nothing.

use crate::i18n::Key;
use crate::state::{use_i18n, use_shared};
use jobspec::share::{self, ShareError, SharePayload};
use leptos::prelude::*;

/// The message for a link that cannot be read.
pub fn share_error_key(e: &ShareError) -> Key {
    match e {
        ShareError::TooLong => Key::ShareErrTooLong,
        ShareError::NoVersion => Key::ShareErrNoVersion,
        ShareError::UnknownVersion(_) => Key::ShareTooNew,
        ShareError::BadBase64 => Key::ShareErrBase64,
        ShareError::BadCompression => Key::ShareErrCorrupt,
        ShareError::BadJson(_) => Key::ShareErrContent,
    }
}

/// Why the link in the address could not be opened, if it could not.
#[derive(Clone, Copy)]
pub struct ShareProblem(pub RwSignal<Option<ShareError>>);

/// Reads the fragment once at start-up and restores what it carries.
pub fn restore_from_location() {
    let shared = use_shared();
    let problem = ShareProblem(RwSignal::new(None));
    provide_context(problem);
    let hash = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default();
    let fragment = hash.trim_start_matches('#');
    if !share::is_share_fragment(fragment) {
        return;
    }
    match share::decode(fragment) {
        Ok(p) => {
            shared.spec.set(p.spec);
            if let Some(pg) = p.playground {
                shared.playground.set(pg);
            }
        }
        Err(e) => problem.0.set(Some(e)),
    }
}

/// The banner for a link that could not be opened.
#[component]
pub fn ShareBanner() -> impl IntoView {
    let i = use_i18n();
    let problem = use_context::<ShareProblem>().unwrap_or(ShareProblem(RwSignal::new(None)));
    move || {
        problem.0.get().map(|e| {
            let key = share_error_key(&e);
            let title = if key == Key::ShareTooNew {
                Key::ShareTooNew
            } else {
                Key::ShareBroken
            };
            // The title already says it all for a link from a newer version.
            let detail = (key != title).then(|| format!(" {}.", i.t(key)));
            view! {
                <div class="banner error" role="alert" data-testid="share-error" data-kind=format!("{e:?}")>
                    <strong>{format!("{}.", i.t(title))}</strong>
                    {detail}
                    " "
                    <span>{i.t(Key::ShareNothingLoaded)}</span>
                    " "
                    <button type="button" on:click=move |_| problem.0.set(None)>{i.t(Key::Dismiss)}</button>
                </div>
            }
        })
    }
}

/// The link for the current state, on the current page.
pub fn current_link() -> String {
    let shared = use_shared();
    let payload = SharePayload {
        spec: shared.spec.get_untracked(),
        playground: Some(shared.playground.get_untracked()),
    };
    let loc = web_sys::window().map(|w| w.location());
    let origin = loc
        .as_ref()
        .and_then(|l| l.origin().ok())
        .unwrap_or_default();
    let path = loc
        .as_ref()
        .and_then(|l| l.pathname().ok())
        .unwrap_or_else(|| "/".into());
    format!("{origin}{path}#{}", share::encode(&payload))
}

/// "Copy link": shows the link (selectable, for browsers without clipboard access) and copies it.
#[component]
pub fn CopyLinkButton() -> impl IntoView {
    let i = use_i18n();
    let link = RwSignal::new(None::<String>);
    let copied = RwSignal::new(false);
    let copy = move |_| {
        let url = current_link();
        link.set(Some(url.clone()));
        copied.set(false);
        if let Some(w) = web_sys::window() {
            let promise = w.navigator().clipboard().write_text(&url);
            leptos::task::spawn_local(async move {
                copied.set(wasm_bindgen_futures::JsFuture::from(promise).await.is_ok());
            });
        }
    };
    view! {
        <button type="button" data-testid="copy-link" on:click=copy>{move || i.t(Key::CopyLink)}</button>
        {move || link.get().map(|url| view! {
            <label class="share-link">
                <span class="sr-only">{i.t(Key::ShareLink)}</span>
                <input type="text" readonly data-testid="share-link" prop:value=url/>
                <span class="muted" aria-live="polite">{move || copied.get().then(|| i.t(Key::LinkCopied))}</span>
            </label>
        })}
    }
}
