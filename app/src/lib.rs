//! The Onramp app: a Leptos client-side rendered single-page app. `lib.rs` holds the components
//! so tests can mount them; `main.rs` only mounts.

pub mod api_wire;
pub mod compare;
pub mod dataset_proto;
pub mod health;
pub mod i18n;
pub mod plot;
pub mod poll;
pub mod progress;
pub mod refusal_words;
pub mod worker_proto;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod browser;
#[cfg(target_arch = "wasm32")]
pub mod dataset_worker;
#[cfg(target_arch = "wasm32")]
pub mod inference;
#[cfg(target_arch = "wasm32")]
pub mod pages;
#[cfg(target_arch = "wasm32")]
pub mod router;
#[cfg(target_arch = "wasm32")]
pub mod session;
#[cfg(target_arch = "wasm32")]
pub mod share_ui;
#[cfg(target_arch = "wasm32")]
pub mod state;
#[cfg(target_arch = "wasm32")]
mod ui;
#[cfg(target_arch = "wasm32")]
pub mod worker_client;

#[cfg(target_arch = "wasm32")]
pub use ui::*;
