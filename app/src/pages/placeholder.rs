//! The page for unknown addresses, so that every route renders something honest.

use crate::i18n::Key;
use crate::state::use_i18n;
use leptos::prelude::*;

#[component]
pub fn NotFound() -> impl IntoView {
    let i = use_i18n();
    view! {
        <section class="page" data-testid="page-not-found">
            <p>{move || i.t(Key::NotFound)}</p>
        </section>
    }
}
