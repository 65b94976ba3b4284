//! "How is this computed?": the formula and assumptions behind each figure of the Plan page —
//! what `onramp plan --explain` prints — one disclosure per figure, and the small buttons next to
//! the figures that open them.

use crate::i18n::{EXPLAINED_FIGURES, Key};
use crate::state::use_i18n;
use jobspec::Plan;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The element id of a figure's explanation.
fn explain_id(figure: &str) -> String {
    format!("explain-{figure}")
}

/// A button next to a figure that opens its explanation and moves the focus there. A button, not
/// an `#explain-…` link: the URL fragment holds the shared spec.
#[component]
pub fn ExplainLink(figure: &'static str) -> impl IntoView {
    let i = use_i18n();
    let open = move |_| {
        let Some(details) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(&explain_id(figure)))
        else {
            return;
        };
        let _ = details.set_attribute("open", "");
        let summary = details.query_selector("summary").ok().flatten();
        match summary.and_then(|s| s.dyn_into::<web_sys::HtmlElement>().ok()) {
            Some(s) => {
                let _ = s.focus();
            }
            None => details.scroll_into_view(),
        }
    };
    view! {
        <button type="button" class="explain-link" data-testid=format!("explain-link-{figure}")
            aria-controls=explain_id(figure) on:click=open
            aria-label=move || i.t(Key::HowIsThisComputed) title=move || i.t(Key::HowIsThisComputed)>
            "?"
        </button>
    }
}

/// One disclosure per figure. The elements stay while the spec is edited (only their text
/// follows the plan), so an explanation the user opened stays open as they type.
#[component]
pub fn Explanations(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    let valid = move || plan.with(|p| p.estimate.is_some());
    view! {
        <div class="explain" data-testid="plan-explain" hidden=move || !valid()>
            <h2>{move || i.t(Key::HowComputed)}</h2>
            {EXPLAINED_FIGURES.iter().map(|&(figure, key)| {
                let part = move |formula: bool| plan.with(|p| {
                    let lang = i.lang.get();
                    p.estimate.as_ref().and_then(|e| e.explain.iter().find(|x| x.figure == figure)).map(|x| {
                        if formula { x.formula.get(lang).to_string() } else { x.assumptions.get(lang).to_string() }
                    })
                });
                view! {
                    <details id=explain_id(figure) data-testid=explain_id(figure)>
                        <summary>{move || i.t(key)}</summary>
                        <p class="formula">
                            <span class="muted">{move || i.t(Key::Formula)}": "</span>
                            <code data-testid="explain-formula">{move || part(true)}</code>
                        </p>
                        <p>
                            <span class="muted">{move || i.t(Key::Assumptions)}": "</span>
                            <span data-testid="explain-assumptions">{move || part(false)}</span>
                        </p>
                    </details>
                }
            }).collect_view()}
        </div>
    }
}
