//! The pages, one module each, and which one a route shows.
//!
//! Pages owned by others plug in here: add `pub mod account;` (and `jobs`, `experiment`) and
//! replace the matching `Placeholder` arm in [`page`] with the page's component.

pub mod placeholder;
pub mod plan;
pub mod plan_parts;
pub mod try_page;

use crate::router::Route;
use leptos::prelude::*;
use placeholder::Placeholder;

/// The page for a route.
pub fn page(route: Route) -> AnyView {
    match route {
        Route::Try => view! { <try_page::TryPage/> }.into_any(),
        Route::Plan => view! { <plan::PlanPage/> }.into_any(),
        Route::Status => view! { <crate::ui::HealthPanel/> }.into_any(),
        Route::Account => view! { <Placeholder name="account"/> }.into_any(),
        Route::Jobs => view! { <Placeholder name="jobs"/> }.into_any(),
        Route::Job(id) => view! { <Placeholder name="job" id=id/> }.into_any(),
        Route::Experiment(id) => view! { <Placeholder name="experiment" id=id/> }.into_any(),
        Route::NotFound => view! { <placeholder::NotFound/> }.into_any(),
    }
}
