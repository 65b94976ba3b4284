//! `model-tiny train`: training from the command line.

use model_tiny::{Error, Result};

pub fn main(_args: &[String]) -> Result<()> {
    Err(Error::Usage("train: not implemented yet".into()))
}

pub fn bench(_steps: usize, _json: bool) -> Result<()> {
    Err(Error::Usage("train bench: not implemented yet".into()))
}
