//! Catalogues of published facts: card types and models, each entry with its source.

pub mod cards;
pub mod models;

pub use cards::{CARDS, Card, card, card_ids};
pub use models::{Arch, Family, MODELS, Model, model, model_by_repo, model_ids};
