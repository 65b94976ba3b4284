//! The pages, one module each, and which one a route shows.

pub mod account;
pub mod account_security;
pub mod account_tokens;
pub mod auth;
pub mod bits;
pub mod compare;
pub mod compare_load;
pub mod experiment;
pub mod experiment_owner;
pub mod job;
pub mod job_artifacts;
pub mod job_notify;
pub mod job_results;
pub mod jobs;
pub mod loss_chart;
pub mod placeholder;
pub mod plan;
pub mod plan_dataset;
pub mod plan_explain;
pub mod plan_parts;
pub mod plan_upload;
pub mod reset;
pub mod status;
pub mod submit;
pub mod try_page;
pub mod verify;

use crate::router::Route;
use leptos::prelude::*;

/// The page for a route.
pub fn page(route: Route) -> AnyView {
    match route {
        Route::Try => view! { <try_page::TryPage/> }.into_any(),
        Route::Plan => view! { <plan::PlanPage/> }.into_any(),
        Route::Status => view! { <status::HealthPanel/> }.into_any(),
        Route::Account => view! { <account::AccountPage/> }.into_any(),
        Route::Verify => view! { <verify::VerifyPage/> }.into_any(),
        Route::Reset => view! { <reset::ResetPage/> }.into_any(),
        Route::Jobs => view! { <jobs::JobsPage/> }.into_any(),
        Route::Job(id) => view! { <job::JobPage id=id/> }.into_any(),
        Route::Experiment(id) => view! { <experiment::ExperimentPage id=id/> }.into_any(),
        Route::Compare(search) => view! { <compare::ComparePage search=search/> }.into_any(),
        Route::NotFound => view! { <placeholder::NotFound/> }.into_any(),
    }
}
