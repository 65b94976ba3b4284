//! Support for the end-to-end tests, shared with `cargo xtask dev`: starting the local stack
//! (the runner and `wrangler dev` with fresh state), an HTTP client for the API, and a small
//! WebDriver client for headless Chromium. Every process started here is stopped when its
//! handle is dropped, also when a test fails.

pub mod api;
pub mod cli;
pub mod dev_proxy;
pub mod fake_backend;
pub mod paths;
pub mod process;
pub mod raw_http;
pub mod runner;
pub mod slurm;
pub mod specs;
pub mod stack;
pub mod wait;
pub mod webdriver;

/// An HTTP agent for tests: statuses are values to assert on, never errors.
pub fn http() -> ureq::Agent {
    http_with_timeout(std::time::Duration::from_secs(60))
}

/// [`http`] with another limit on each whole request.
pub fn http_with_timeout(limit: std::time::Duration) -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(limit))
            .build(),
    )
}
