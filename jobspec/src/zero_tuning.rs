//! The `[deepspeed]` table: DeepSpeed's ZeRO tuning knobs, by DeepSpeed's own names, which a
//! user's ds_config brings and the job's ds_config carries over the `zero_optimization`
//! jobspec writes. They trade communication for memory in buffers; the plan's memory follows
//! DeepSpeed's estimator, which assumes them at their defaults, and validation warns where
//! ZeRO-3's limits on live and prefetched parameters are raised above them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

/// The `zero_optimization` keys a spec may set, in DeepSpeed's words.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZeroTuning {
    /// Elements reduced at once (ZeRO 1 and up; default 500000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_bucket_size: Option<u64>,
    /// Elements all-gathered at once after the step (ZeRO 1 and 2; default 500000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allgather_bucket_size: Option<u64>,
    /// Overlap the gradient reduction with the backward pass (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_comm: Option<bool>,
    /// Copy gradients into one contiguous buffer as they are produced (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contiguous_gradients: Option<bool>,
    /// Reduce gradients with reduce-scatter rather than all-reduce (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_scatter: Option<bool>,
    /// All-gather the updated partitions rather than broadcast them (ZeRO 1 and 2; default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allgather_partitions: Option<bool>,
    /// Spread the gradient copy over ranks round-robin (ZeRO 1 and 2; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_robin_gradients: Option<bool>,
    /// Elements the optimizer steps at once (ZeRO 3; default 1000000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_size: Option<u64>,
    /// Elements of parameters fetched ahead of use (ZeRO 3; default 50000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage3_prefetch_bucket_size: Option<u64>,
    /// Parameters smaller than this many elements are not partitioned (ZeRO 3; default 100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage3_param_persistence_threshold: Option<u64>,
    /// Elements of gathered parameters kept on each GPU at most (ZeRO 3; default 1000000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage3_max_live_parameters: Option<u64>,
    /// A parameter used again within this many elements is not released (ZeRO 3; default
    /// 1000000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage3_max_reuse_distance: Option<u64>,
}

/// The table's keys, in the order of [`ZeroTuning`].
pub const ZERO_TUNING_KEYS: &[&str] = &[
    "reduce_bucket_size",
    "allgather_bucket_size",
    "overlap_comm",
    "contiguous_gradients",
    "reduce_scatter",
    "allgather_partitions",
    "round_robin_gradients",
    "sub_group_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
];

/// Keys that are element counts (the others are switches).
pub const ZERO_SIZE_KEYS: &[&str] = &[
    "reduce_bucket_size",
    "allgather_bucket_size",
    "sub_group_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
];

/// The largest element count a size may be: far past any model's, small enough for every JSON
/// reader.
pub const MAX_ZERO_ELEMENTS: u64 = 1_000_000_000_000;

/// Keys only ZeRO 3 reads.
pub const STAGE3_ONLY: &[&str] = &[
    "sub_group_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
];

/// Keys ZeRO 3 ignores (its parameters are gathered per layer, not after the step).
pub const BELOW_STAGE3_ONLY: &[&str] = &[
    "allgather_bucket_size",
    "allgather_partitions",
    "round_robin_gradients",
];

impl ZeroTuning {
    /// What each key is when the spec leaves it out, at ZeRO 3 (the schema's and the
    /// reference's defaults): jobspec's own where its ds_config writes one (`deepspeed::export`),
    /// else DeepSpeed's.
    pub fn defaults() -> ZeroTuning {
        ZeroTuning {
            reduce_bucket_size: Some(500_000_000),
            allgather_bucket_size: Some(500_000_000),
            overlap_comm: Some(true),
            contiguous_gradients: Some(true),
            reduce_scatter: Some(true),
            allgather_partitions: Some(true),
            round_robin_gradients: Some(false),
            sub_group_size: Some(1_000_000_000),
            stage3_prefetch_bucket_size: Some(50_000_000),
            stage3_param_persistence_threshold: Some(100_000),
            stage3_max_live_parameters: Some(1_000_000_000),
            stage3_max_reuse_distance: Some(1_000_000_000),
        }
    }

    pub fn is_default(&self) -> bool {
        *self == ZeroTuning::default()
    }

    /// The keys set, with their values, in the order of [`ZERO_TUNING_KEYS`].
    pub fn entries(&self) -> Vec<(&'static str, Value)> {
        let sizes = [
            ("reduce_bucket_size", self.reduce_bucket_size),
            ("allgather_bucket_size", self.allgather_bucket_size),
            ("sub_group_size", self.sub_group_size),
            (
                "stage3_prefetch_bucket_size",
                self.stage3_prefetch_bucket_size,
            ),
            (
                "stage3_param_persistence_threshold",
                self.stage3_param_persistence_threshold,
            ),
            (
                "stage3_max_live_parameters",
                self.stage3_max_live_parameters,
            ),
            ("stage3_max_reuse_distance", self.stage3_max_reuse_distance),
        ];
        let switches = [
            ("overlap_comm", self.overlap_comm),
            ("contiguous_gradients", self.contiguous_gradients),
            ("reduce_scatter", self.reduce_scatter),
            ("allgather_partitions", self.allgather_partitions),
            ("round_robin_gradients", self.round_robin_gradients),
        ];
        let mut out: Vec<(&'static str, Value)> = sizes
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, json!(v))))
            .chain(
                switches
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| (k, json!(v)))),
            )
            .collect();
        out.sort_by_key(|(k, _)| ZERO_TUNING_KEYS.iter().position(|x| x == k));
        out
    }

    /// Sets one key from a JSON value: a whole number for a size, a boolean for a switch.
    /// `false` when the key is not one of [`ZERO_TUNING_KEYS`] or the value is of the wrong kind.
    pub fn set(&mut self, key: &str, value: &Value) -> bool {
        let size = value.as_u64();
        let switch = value.as_bool();
        let slot_u = match key {
            "reduce_bucket_size" => Some(&mut self.reduce_bucket_size),
            "allgather_bucket_size" => Some(&mut self.allgather_bucket_size),
            "sub_group_size" => Some(&mut self.sub_group_size),
            "stage3_prefetch_bucket_size" => Some(&mut self.stage3_prefetch_bucket_size),
            "stage3_param_persistence_threshold" => {
                Some(&mut self.stage3_param_persistence_threshold)
            }
            "stage3_max_live_parameters" => Some(&mut self.stage3_max_live_parameters),
            "stage3_max_reuse_distance" => Some(&mut self.stage3_max_reuse_distance),
            _ => None,
        };
        if let Some(slot) = slot_u {
            *slot = size;
            return size.is_some();
        }
        let slot_b = match key {
            "overlap_comm" => &mut self.overlap_comm,
            "contiguous_gradients" => &mut self.contiguous_gradients,
            "reduce_scatter" => &mut self.reduce_scatter,
            "allgather_partitions" => &mut self.allgather_partitions,
            "round_robin_gradients" => &mut self.round_robin_gradients,
            _ => return false,
        };
        *slot_b = switch;
        switch.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_can_be_set_and_comes_back_in_order() {
        let mut z = ZeroTuning::default();
        for (i, k) in ZERO_TUNING_KEYS.iter().enumerate().rev() {
            let v = if ZERO_SIZE_KEYS.contains(k) {
                json!(1000 + i)
            } else {
                json!(true)
            };
            assert!(z.set(k, &v), "{k}");
        }
        let keys: Vec<&str> = z.entries().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ZERO_TUNING_KEYS);
        // The serde names are the same keys.
        let ser = serde_json::to_value(&z).unwrap();
        assert_eq!(ser.as_object().unwrap().len(), ZERO_TUNING_KEYS.len());
        assert!(!z.set("stage", &json!(3)));
        assert!(!z.set("overlap_comm", &json!(3)));
        assert!(!z.set("reduce_bucket_size", &json!("auto")));
    }
}
