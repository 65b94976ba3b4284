//! The backends, where jobs run: their configuration (`config.rs`, from `BACKENDS`), what
//! `GET /api/backends` shows of them (`public.rs`), the one trait every adapter implements
//! without I/O (`adapter.rs`), and the adapters: the runner's (`runner.rs`) and Slurm's
//! (`slurm/`). The worker performs the calls they build (`worker/backends.rs`).

pub mod adapter;
pub mod config;
pub mod public;
pub mod runner;
pub mod slurm;

use crate::error::ApiError;
use adapter::Backend;
use config::{BackendConfig, BackendKind};

/// The adapter for a configured backend, for calls made at `now_ms` (Slurm's minted tokens
/// start then).
pub fn adapter_for(config: &BackendConfig, now_ms: i64) -> Result<Box<dyn Backend>, ApiError> {
    match config.kind {
        BackendKind::Runner => Ok(Box::new(runner::RunnerBackend::new(config))),
        BackendKind::Slurm => slurm::backend::SlurmBackend::new(config, now_ms)
            .map(|b| Box::new(b) as Box<dyn Backend>)
            .map_err(ApiError::internal),
    }
}
