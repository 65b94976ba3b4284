//! A spec that passed validation, with everything the estimators need resolved (`rules.rs`
//! builds it), and the defaults it resolves with.

use super::derive::{DEFAULT_MFU_CPU, DEFAULT_MFU_GPU};
use crate::catalog::{self, Arch, Card, Family};
use crate::spec::*;

/// The LoRA target that means every linear layer of every block, in any family.
pub const ALL_LINEAR: &str = "all-linear";

/// A spec that passed validation, with everything the estimators need resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidSpec {
    pub(super) spec: JobSpec,
    pub(super) card: &'static Card,
    pub(super) arch: Arch,
    pub(super) model_name: String,
    pub(super) model_max_seq_len: Option<u32>,
    pub(super) world: u32,
    pub(super) dp: u32,
    pub(super) steps: u64,
    pub(super) train_tokens: u64,
    pub(super) time_limit_s: u64,
    pub(super) claimed_s: Option<u64>,
    pub(super) mfu: f64,
    pub(super) lora_rank: u32,
    pub(super) lora_alpha: u32,
    pub(super) lora_targets: Vec<String>,
    pub(super) price_overrides: Vec<(&'static str, u64)>,
    pub(super) node_override: NodeOverride,
}

/// A deployment's own nodes: host RAM and NVMe per node, where it knows them better than the
/// catalogue (`None` keeps the catalogue's figure for the card type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeOverride {
    pub ram_bytes: Option<u64>,
    pub nvme_bytes: Option<u64>,
}

impl ValidSpec {
    pub fn spec(&self) -> &JobSpec {
        &self.spec
    }
    pub fn card(&self) -> &'static Card {
        self.card
    }
    pub fn arch(&self) -> &Arch {
        &self.arch
    }
    pub fn model_name(&self) -> &str {
        &self.model_name
    }
    /// Total cards: cards per node × nodes.
    pub fn world_size(&self) -> u32 {
        self.world
    }
    /// Data-parallel degree: world / (tp × pp × sp).
    pub fn dp(&self) -> u32 {
        self.dp
    }
    /// Sequences per optimizer step: micro-batch × accumulation × data-parallel degree.
    pub fn global_batch(&self) -> u64 {
        u64::from(self.spec.train.micro_batch)
            * u64::from(self.spec.train.grad_accum)
            * u64::from(self.dp)
    }
    pub fn steps(&self) -> u64 {
        self.steps
    }
    /// Tokens processed over the whole run.
    pub fn train_tokens(&self) -> u64 {
        self.train_tokens
    }
    pub fn time_limit_s(&self) -> u64 {
        self.time_limit_s
    }
    pub fn claimed_s(&self) -> Option<u64> {
        self.claimed_s
    }
    pub fn mfu(&self) -> f64 {
        self.mfu
    }
    pub fn lora_rank(&self) -> u32 {
        self.lora_rank
    }
    pub fn lora_alpha(&self) -> u32 {
        self.lora_alpha
    }
    pub fn lora_targets(&self) -> &[String] {
        &self.lora_targets
    }
    /// The catalogue entry of the model, if the spec names one.
    pub fn catalogue_model(&self) -> Option<&'static catalog::Model> {
        super::derive::catalogue_model(&self.spec)
    }
    /// How the model names its layers (what the LoRA targets are names in).
    pub fn family(&self) -> Family {
        super::derive::family(&self.spec)
    }
    /// The same job on another card type, same cluster shape (clamped to what a node holds);
    /// MFU follows the card type unless the spec fixed it.
    pub(crate) fn with_card(&self, card: &'static Card) -> ValidSpec {
        let mut v = self.clone();
        v.card = card;
        v.spec.resources.card = card.id.to_string();
        if v.spec.estimate.mfu.is_none() {
            v.mfu = if card.is_gpu {
                DEFAULT_MFU_GPU
            } else {
                DEFAULT_MFU_CPU
            };
        }
        v
    }

    /// Price per card-hour in fen: the deployment's override for this card, else the catalogue's.
    pub fn price_fen_per_hour(&self) -> u64 {
        self.price_overrides
            .iter()
            .find(|(id, _)| *id == self.card.id)
            .map_or(self.card.price_fen_per_hour, |(_, fen)| *fen)
    }

    /// The same spec priced with a deployment's own prices (`(card id, fen per card-hour)`;
    /// unknown ids are ignored). Every cost figure derived from it uses them.
    pub fn with_prices(mut self, prices: &[(&str, u64)]) -> ValidSpec {
        self.price_overrides = prices
            .iter()
            .filter_map(|(id, fen)| catalog::card(id).map(|c| (c.id, *fen)))
            .collect();
        self
    }

    /// The same spec on nodes with this RAM and NVMe (a backend's `node_ram_gib`).
    pub fn with_node(mut self, node: NodeOverride) -> ValidSpec {
        self.node_override = node;
        self
    }

    /// Host RAM per node: the deployment's figure, else the catalogue's for the card type.
    pub fn node_ram_bytes(&self) -> u64 {
        self.node_override
            .ram_bytes
            .unwrap_or(self.card.node.ram_bytes)
    }

    /// Local NVMe per node: the deployment's figure, else the catalogue's for the card type.
    pub fn node_nvme_bytes(&self) -> u64 {
        self.node_override
            .nvme_bytes
            .unwrap_or(self.card.node.nvme_bytes)
    }

    /// `other` priced and placed as this spec is: its prices and node figures (for a patched
    /// copy of this spec, validated anew).
    pub(crate) fn carry_overrides(&self, mut other: ValidSpec) -> ValidSpec {
        other.price_overrides = self.price_overrides.clone();
        other.node_override = self.node_override;
        other
    }

    /// The most this job can cost: every card for the whole time limit, in fen.
    pub fn max_cost_fen(&self) -> u64 {
        crate::money::cost_fen(self.price_fen_per_hour(), self.world, self.time_limit_s)
    }
}
