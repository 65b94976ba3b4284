//! The same spec on every card type, side by side: memory per card, fit, time and cost.

use crate::catalog::CARDS;
use crate::spec::Task;
use crate::validate::ValidSpec;
use serde::Serialize;

/// One row of the comparison table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CardRow {
    pub card: &'static str,
    pub display: &'static str,
    /// Cards the job would use (the spec's cluster shape).
    pub cards: u32,
    pub per_gpu_bytes: u64,
    pub card_bytes: u64,
    pub fits: bool,
    pub seconds: f64,
    pub fen: u64,
    pub price_fen_per_hour: u64,
    /// Whether this is the spec's own card.
    pub current: bool,
}

/// Estimates the spec on every card type. The CPU row appears only for `tiny-train`, and
/// cards whose nodes are smaller than the spec's `cards_per_node` are left out.
pub fn compare_cards(v: &ValidSpec) -> Vec<CardRow> {
    let spec = v.spec();
    CARDS
        .iter()
        .filter(|c| c.is_gpu || (spec.task == Task::TinyTrain && v.world_size() == 1))
        .filter(|c| spec.resources.cards_per_node <= c.max_per_node)
        .map(|card| {
            let other = v.with_card(card);
            let (m, t, c) = super::quick::quick(&other);
            CardRow {
                card: card.id,
                display: card.display,
                cards: other.world_size(),
                per_gpu_bytes: m.per_gpu.total_bytes,
                card_bytes: m.card_bytes,
                fits: m.fits,
                seconds: t.seconds,
                fen: c.fen,
                price_fen_per_hour: other.price_fen_per_hour(),
                current: card.id == v.card().id,
            }
        })
        .collect()
}
