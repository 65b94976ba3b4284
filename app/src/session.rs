//! Who is signed in, shared through context: read once from `GET /api/me` at start-up, set by
//! sign-up and login, cleared by logout. The header shows it with a sign-out button.

use crate::api;
use crate::api_wire::Me;
use crate::i18n::Key;
use crate::pages::bits::tr;
use crate::router::{Link, use_router};
use crate::state::use_i18n;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[derive(Clone, Copy)]
pub struct Session {
    /// The account, once known; `None` when signed out.
    pub me: RwSignal<Option<Me>>,
    /// False until the first `GET /api/me` answered, so pages do not flash a sign-in form.
    pub checked: RwSignal<bool>,
}

impl Session {
    pub fn install() -> Session {
        let s = Session {
            me: RwSignal::new(None),
            checked: RwSignal::new(false),
        };
        provide_context(s);
        s.refresh();
        s
    }

    /// Asks the edge who this is (and the current balance).
    pub fn refresh(self) {
        spawn_local(async move {
            let me = api::get::<Me>("/api/me").await.ok();
            self.me.set(me);
            self.checked.set(true);
        });
    }

    pub fn set_balance(self, balance_fen: i64) {
        self.me.update(|m| {
            if let Some(m) = m {
                m.balance_fen = balance_fen;
            }
        });
    }
}

pub fn use_session() -> Session {
    use_context::<Session>().unwrap_or_else(Session::install)
}

/// The header's account corner: who is signed in and a sign-out button, or a sign-in link.
#[component]
pub fn SessionNav() -> impl IntoView {
    let i = use_i18n();
    let session = use_session();
    let router = use_router();
    let sign_out = move |_| {
        spawn_local(async move {
            // A session the edge no longer knows is signed out too; either way forget it here.
            let _ = api::call("POST", "/api/auth/logout", None, &[]).await;
            session.me.set(None);
            router.navigate("/account");
        });
    };
    // The email only: a new balance must not rebuild the buttons (and take the focus away).
    let email = Memo::new(move |_| session.me.with(|m| m.as_ref().map(|m| m.email.clone())));
    move || match email.get() {
        Some(email) => view! {
            <span class="who" data-testid="session-email">
                <span class="sr-only">{i.t(Key::SignedInAs)}" "</span>{email}
            </span>
            <button type="button" class="lang" data-testid="sign-out" on:click=sign_out>
                {i.t(Key::SignOut)}
            </button>
        }
        .into_any(),
        None => view! {
            <Link href="/account" testid="nav-sign-in">{tr(i, Key::SignIn)}</Link>
        }
        .into_any(),
    }
}
