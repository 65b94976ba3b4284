//! Stand-ins for the pages that are not built yet (account, jobs, experiments) and the page for
//! unknown addresses, so that every route renders something honest.

use crate::i18n::Key;
use crate::state::use_i18n;
use leptos::prelude::*;

#[component]
pub fn Placeholder(
    name: &'static str,
    #[prop(optional, into)] id: Option<String>,
) -> impl IntoView {
    let i = use_i18n();
    view! {
        <section class="page" data-testid=format!("page-{name}") data-id=id>
            <p>{move || i.t(Key::ComingSoon)}</p>
        </section>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    let i = use_i18n();
    view! {
        <section class="page" data-testid="page-not-found">
            <p>{move || i.t(Key::NotFound)}</p>
        </section>
    }
}
