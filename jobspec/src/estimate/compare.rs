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
    /// Where the spec's own count does not fit: the fewest cards of this type that hold the
    /// same job (ZeRO partitions its states over more ranks, more nodes share the offload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits_with: Option<FitsWith>,
}

/// A larger cluster of one card type that holds the job, with its time and cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FitsWith {
    pub cards: u32,
    pub cards_per_node: u32,
    pub nodes: u32,
    pub per_gpu_bytes: u64,
    pub seconds: f64,
    pub fen: u64,
}

/// Cluster sizes the search tries, as (cards per node, nodes): a node filled in powers of two,
/// then whole nodes, up to 64 of them.
const NODE_COUNTS: [u32; 12] = [2, 3, 4, 6, 8, 12, 16, 24, 32, 40, 48, 64];

/// The fewest cards of `card` (more than the spec's) at which the job fits, same settings.
pub(crate) fn fits_with(v: &ValidSpec, card: &'static crate::catalog::Card) -> Option<FitsWith> {
    let r = &v.spec().resources;
    let now = v.world_size();
    let max = card.max_per_node;
    let within: Vec<(u32, u32)> = [1u32, 2, 4, 8, 16]
        .into_iter()
        .filter(|n| *n <= max)
        .map(|n| (n, 1))
        .chain(NODE_COUNTS.into_iter().map(|n| (max, n)))
        .filter(|(per, nodes)| per * nodes > now && *per >= r.cards_per_node.min(max))
        .collect();
    within.into_iter().find_map(|(per, nodes)| {
        let mut spec = v.spec().clone();
        spec.resources.card = card.id.to_string();
        spec.resources.cards_per_node = per;
        spec.resources.nodes = nodes;
        let (Some(other), _) = crate::validate::validate_spec(spec) else {
            return None;
        };
        let other = v.carry_overrides(other);
        let (m, t, c) = super::quick::quick(&other);
        m.fits.then(|| FitsWith {
            cards: per * nodes,
            cards_per_node: per,
            nodes,
            per_gpu_bytes: m.per_gpu.total_bytes,
            seconds: t.seconds,
            fen: c.fen,
        })
    })
}

/// Estimates the spec on every card type it may run on: `tiny-train` on the CPU alone (one
/// process), every other task on the GPUs; cards whose nodes are smaller than the spec's
/// `cards_per_node` are left out.
pub fn compare_cards(v: &ValidSpec) -> Vec<CardRow> {
    let spec = v.spec();
    let tiny = spec.task == Task::TinyTrain;
    CARDS
        .iter()
        .filter(|c| {
            if tiny {
                !c.is_gpu && v.world_size() == 1
            } else {
                c.is_gpu
            }
        })
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
                fits_with: if m.fits || !card.is_gpu {
                    None
                } else {
                    fits_with(v, card)
                },
            }
        })
        .collect()
}
