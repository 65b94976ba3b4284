//! The Onramp app: a Leptos client-side rendered single-page app. `lib.rs` holds the components
//! so tests can mount them; `main.rs` only mounts.

pub mod health;

#[cfg(target_arch = "wasm32")]
mod ui;

#[cfg(target_arch = "wasm32")]
pub use ui::*;
