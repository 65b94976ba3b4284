//! View pieces the account, jobs, job and experiment pages share. Each is one concrete type, so
//! every page that uses one reuses the same compiled code: the app's download stays small.

use crate::i18n::Key;
use crate::state::I18n;
use leptos::prelude::*;

/// A one-line note: "Loading…", "No movements yet.", an unknown id.
pub fn note(i: I18n, key: Key, class: &'static str, testid: &'static str) -> AnyView {
    view! { <p class=class data-testid=testid>{i.t(key)}</p> }.into_any()
}

/// "Loading…" while an answer is on its way.
pub fn loading(i: I18n) -> AnyView {
    note(i, Key::Loading, "muted", "loading")
}

/// One labelled figure of a `<dl class="facts">`.
pub fn fact(i: I18n, label: Key, value: String, testid: &'static str) -> AnyView {
    view! { <div><dt>{i.t(label)}</dt><dd data-testid=testid>{value}</dd></div> }.into_any()
}

/// The text of `key` in the current language, as a view that follows the language switch. One
/// closure type for every label of these pages (a closure per label would each be compiled).
pub fn tr(i: I18n, key: Key) -> impl Fn() -> &'static str + Copy + Send + Sync + 'static {
    move || i.t(key)
}
