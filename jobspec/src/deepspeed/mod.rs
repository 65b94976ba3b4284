//! DeepSpeed `ds_config.json`: export for a spec, and import with DeepSpeed's own checks.
//!
//! The batch rule is DeepSpeed's (`deepspeed/runtime/config.py`, `_configure_train_batch_size`
//! and `_batch_assertion`): train_batch_size = micro batch × gradient accumulation × data-parallel
//! size; any two determine the third; all three must agree. `"auto"` (filled in by the Hugging
//! Face Trainer) counts as not given.

mod carry;
mod export;
mod import;
mod tuning;

pub use carry::not_carried;
pub use export::{
    ADAMW_BETAS, ADAMW_EPS, ADAMW_WEIGHT_DECAY, GRAD_CLIP, OptimNumbers, SGD_MOMENTUM, ds_config,
    engine_config, optim_numbers,
};
pub use import::{DsImport, import_ds_config};
pub use tuning::Tuning;
