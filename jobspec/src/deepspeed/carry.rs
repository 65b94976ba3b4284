//! What of a user's ds_config a spec can carry beyond the batch, precision and ZeRO: the
//! optimizer, its schedule and warm-up, and sequence parallelism; and what it cannot, found by
//! comparing the config with the one jobspec writes for the imported spec, since that one is
//! what the job runs.

use crate::diag::{Code, Diagnostic};
use crate::spec::{Optimizer, Schedule};
use serde_json::{Map, Value};

/// The top-level keys DeepSpeed knows.
pub(crate) const TOP_KEYS: &[&str] = &[
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "optimizer",
    "scheduler",
    "fp16",
    "bf16",
    "bfloat16",
    "amp",
    "zero_optimization",
    "gradient_clipping",
    "steps_per_print",
    "wall_clock_breakdown",
    "activation_checkpointing",
    "flops_profiler",
    "tensorboard",
    "wandb",
    "csv_monitor",
    "comet",
    "comms_logger",
    "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer",
    "prescale_gradients",
    "gradient_predivide_factor",
    "sparse_gradients",
    "communication_data_type",
    "seq_parallel_communication_data_type",
    "data_types",
    "checkpoint",
    "elasticity",
    "autotuning",
    "compression_training",
    "data_efficiency",
    "aio",
    "memory_breakdown",
    "pipeline",
    "sequence_parallel_size",
    "tensor_parallel",
    "curriculum_learning",
    "eigenvalue",
    "progressive_layer_drop",
    "disable_allgather",
    "load_universal_checkpoint",
    "use_node_local_storage",
    "hybrid_engine",
    "torch_autocast",
    "graph_harvesting",
    "dump_state",
    "sparse_attention",
    "nebula",
    "monitor_config",
];

/// The keys of `zero_optimization` DeepSpeed knows.
pub(crate) const ZERO_KEYS: &[&str] = &[
    "stage",
    "allgather_partitions",
    "allgather_bucket_size",
    "overlap_comm",
    "reduce_scatter",
    "reduce_bucket_size",
    "contiguous_gradients",
    "offload_optimizer",
    "offload_param",
    "sub_group_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
    "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save",
    "round_robin_gradients",
    "zero_hpz_partition_size",
    "zero_quantized_weights",
    "zero_quantized_nontrainable_weights",
    "zero_quantized_gradients",
    "mics_shard_size",
    "mics_hierarchical_params_gather",
    "memory_efficient_linear",
    "cpu_offload",
    "cpu_offload_params",
    "cpu_offload_use_pin_memory",
    "ignore_unused_parameters",
    "elastic_checkpoint",
    "load_from_fp32_weights",
    "stage3_module_granularity_threshold",
    "log_trace_cache_warnings",
    "use_multi_rank_bucket_allreduce",
    "legacy_stage1",
    "use_all_reduce_for_fetch_params",
    "module_granularity_threshold",
];

/// The optimizer, the schedule, the warm-up steps and the sequence- and tensor-parallel degrees
/// a config names; `None` for what it leaves out or to "auto".
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Carried {
    pub optimizer: Option<Optimizer>,
    pub schedule: Option<Schedule>,
    pub warmup: Option<u64>,
    pub sp: Option<u32>,
    /// DeepSpeed AutoTP's `tensor_parallel.autotp_size`.
    pub tp: Option<u32>,
}

/// Reads what [`Carried`] holds. A type the trainer does not run is a warning (the spec's own
/// stays); a value of the wrong kind is an error.
pub(crate) fn carried(cfg: &Map<String, Value>, diags: &mut Vec<Diagnostic>) -> Carried {
    let mut c = Carried::default();
    if let Some(t) = cfg.get("optimizer").and_then(|o| o.get("type")) {
        c.optimizer = match type_word(t).as_deref() {
            None | Some("auto") => None,
            // DeepSpeed's "Adam" is AdamW unless `adam_w_mode` is false.
            Some("adamw") => Some(Optimizer::Adamw),
            Some("adam") if adam_w_mode(cfg) => Some(Optimizer::Adamw),
            Some("sgd") => Some(Optimizer::Sgd),
            Some(_) => {
                diags.push(not_run(
                    "optimizer.type",
                    t,
                    (
                        "AdamW (or Adam with adam_w_mode on), SGD",
                        "AdamW（或开启 adam_w_mode 的 Adam）、SGD",
                    ),
                ));
                None
            }
        };
    }
    if let Some(s) = cfg.get("scheduler") {
        if let Some(t) = s.get("type") {
            c.schedule = match type_word(t).as_deref() {
                None | Some("auto") => None,
                Some("warmupcosinelr") => Some(Schedule::Cosine),
                Some("warmupdecaylr") => Some(Schedule::Linear),
                Some("warmuplr") => Some(Schedule::Constant),
                Some(_) => {
                    diags.push(not_run(
                        "scheduler.type",
                        t,
                        (
                            "WarmupCosineLR, WarmupDecayLR, WarmupLR",
                            "WarmupCosineLR、WarmupDecayLR、WarmupLR",
                        ),
                    ));
                    None
                }
            };
        }
        c.warmup = s
            .get("params")
            .and_then(|p| p.get("warmup_num_steps"))
            .and_then(|w| count(w, "scheduler.params.warmup_num_steps", diags));
    }
    c.sp = cfg
        .get("sequence_parallel_size")
        .and_then(|v| count(v, "sequence_parallel_size", diags))
        .and_then(|n| u32::try_from(n).ok());
    c.tp = cfg
        .get("tensor_parallel")
        .and_then(|t| t.get("autotp_size"))
        .and_then(|v| count(v, "tensor_parallel.autotp_size", diags))
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n > 0);
    c
}

/// A type name in lower case, or `None` when it is not a string.
fn type_word(t: &Value) -> Option<String> {
    t.as_str().map(str::to_ascii_lowercase)
}

fn adam_w_mode(cfg: &Map<String, Value>) -> bool {
    cfg.get("optimizer")
        .and_then(|o| o.get("params"))
        .and_then(|p| p.get("adam_w_mode"))
        .is_none_or(|m| m != &Value::Bool(false))
}

fn not_run(path: &str, t: &Value, (runs, runs_zh): (&str, &str)) -> Diagnostic {
    Diagnostic::warning(
        Code::NotCarried,
        path,
        format!("Onramp's trainer runs {runs}, not {t}: the spec's own setting stays"),
        format!("Onramp 的训练器只运行 {runs_zh}，不运行 {t}：保留规格自己的设置"),
    )
}

/// A whole number of steps (0 or more), or `None` for "auto"; anything else is an error.
fn count(v: &Value, path: &str, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    match v {
        Value::String(s) if s == "auto" => None,
        Value::Number(n) if n.as_u64().is_some() => n.as_u64(),
        other => {
            diags.push(Diagnostic::error(
                Code::WrongType,
                path,
                format!("`{path}` must be a whole number or \"auto\", not {other}"),
                format!("`{path}` 必须是非负整数或 \"auto\"，而不是 {other}"),
            ));
            None
        }
    }
}

/// The settings of `user` (a ds_config's text) that the job will not run as written: every
/// value other than "auto" that jobspec's `ours` (the ds_config of the imported spec) holds
/// otherwise or leaves to DeepSpeed's default. Keys DeepSpeed does not know are left out: the
/// import already warned of them. An info each, in the config's order.
pub fn not_carried(user: &str, ours: &Value) -> Vec<Diagnostic> {
    let Ok(Value::Object(cfg)) = serde_json::from_str::<Value>(user) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in &cfg {
        if !TOP_KEYS.contains(&k.as_str()) {
            continue;
        }
        let zero = k == "zero_optimization";
        walk(k, v, ours.get(k), zero, &mut out);
    }
    locate(user, &mut out);
    out.sort_by_key(|d| (d.line, d.column));
    out
}

fn walk(path: &str, user: &Value, ours: Option<&Value>, zero: bool, out: &mut Vec<Diagnostic>) {
    match user {
        Value::String(s) if s == "auto" => {}
        // A table that switches itself off (`"enabled": false`, `"device": "none"`) means
        // what its absence means.
        Value::Object(m) if ours.is_none() && switched_off(m) => {}
        Value::Object(m) => {
            for (k, v) in m {
                if zero && !ZERO_KEYS.contains(&k.as_str()) {
                    continue;
                }
                walk(
                    &format!("{path}.{k}"),
                    v,
                    ours.and_then(|o| o.get(k)),
                    false,
                    out,
                );
            }
        }
        _ if same(path, user, ours) => {}
        _ => out.push(differs(path, user, ours)),
    }
}

fn switched_off(m: &Map<String, Value>) -> bool {
    m.get("enabled")
        .is_some_and(|e| e == &Value::Bool(false) || e == "auto")
        || m.get("device").is_some_and(|d| d == "none")
}

/// Equal as JSON, numbers by value (`1e9` is `1000000000`); where ours leaves the key out,
/// equal to DeepSpeed's default for it.
fn same(path: &str, user: &Value, ours: Option<&Value>) -> bool {
    match (user, ours) {
        (Value::Number(a), Some(Value::Number(b))) => a.as_f64() == b.as_f64(),
        (a, Some(b)) => a == b,
        (a, None) => match (a, default_of(path)) {
            (Value::Number(a), Some(Default::Num(d))) => a.as_f64() == Some(d),
            (Value::Bool(a), Some(Default::Bool(d))) => *a == d,
            _ => false,
        },
    }
}

enum Default {
    Num(f64),
    Bool(bool),
}

/// DeepSpeed's default for a key, as the version in the trainer's lock has it
/// (`deepspeed/runtime/constants.py`, `runtime/zero/config.py`, `runtime/zero/offload_config.py`).
fn default_of(path: &str) -> Option<Default> {
    use Default::{Bool, Num};
    let (table, key) = path.rsplit_once('.').unwrap_or(("", path));
    Some(match (table, key) {
        ("", "gradient_clipping" | "gradient_predivide_factor") => Num(1.0),
        ("", "zero_force_ds_cpu_optimizer") => Bool(true),
        (
            "",
            "wall_clock_breakdown"
            | "memory_breakdown"
            | "prescale_gradients"
            | "zero_allow_untested_optimizer"
            | "disable_allgather",
        ) => Bool(false),
        ("zero_optimization", "reduce_bucket_size" | "allgather_bucket_size") => Num(5e8),
        (
            "zero_optimization",
            "sub_group_size" | "stage3_max_live_parameters" | "stage3_max_reuse_distance",
        ) => Num(1e9),
        ("zero_optimization", "stage3_prefetch_bucket_size") => Num(5e7),
        ("zero_optimization", "stage3_param_persistence_threshold") => Num(1e5),
        ("zero_optimization", "zero_hpz_partition_size") => Num(1.0),
        ("zero_optimization", "stage3_module_granularity_threshold") => Num(0.0),
        (
            "zero_optimization",
            "contiguous_gradients"
            | "reduce_scatter"
            | "use_multi_rank_bucket_allreduce"
            | "allgather_partitions"
            | "load_from_fp32_weights"
            | "ignore_unused_parameters"
            | "memory_efficient_linear",
        ) => Bool(true),
        (
            "zero_optimization",
            "elastic_checkpoint"
            | "stage3_gather_16bit_weights_on_model_save"
            | "stage3_gather_fp16_weights_on_model_save"
            | "legacy_stage1"
            | "round_robin_gradients"
            | "zero_quantized_weights"
            | "zero_quantized_nontrainable_weights"
            | "zero_quantized_gradients"
            | "log_trace_cache_warnings"
            | "use_all_reduce_for_fetch_params",
        ) => Bool(false),
        ("zero_optimization.offload_param" | "zero_optimization.offload_optimizer", k) => match k {
            "pin_memory" => Bool(true),
            "fast_init" => Bool(false),
            "ratio" => Num(1.0),
            "buffer_size" => Num(1e8),
            "max_in_cpu" => Num(1e9),
            "buffer_count" if table.ends_with("param") => Num(5.0),
            "buffer_count" => Num(4.0),
            _ => return None,
        },
        _ => return None,
    })
}

/// A value as the user would write it: whole floats without a fraction (`1e9` is 1000000000).
fn shown(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if v.is_f64() && f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.0}"),
        _ => v.to_string(),
    }
}

fn differs(path: &str, user: &Value, ours: Option<&Value>) -> Diagnostic {
    let (en, zh) = match ours {
        Some(o) => (
            format!(
                "`{path}` = {} is not carried: the job's ds_config has {}",
                shown(user),
                shown(o)
            ),
            format!(
                "`{path}` = {} 未被采用：作业的 ds_config 中为 {}",
                shown(user),
                shown(o)
            ),
        ),
        None => (
            format!(
                "`{path}` = {} is not carried: the job's ds_config leaves it to DeepSpeed's default",
                shown(user)
            ),
            format!(
                "`{path}` = {} 未被采用：作业的 ds_config 使用 DeepSpeed 的默认值",
                shown(user)
            ),
        ),
    };
    Diagnostic::info(Code::NotCarried, path, en, zh)
}

/// Gives each diagnostic without a line the line and column of its key in the config's text
/// (`zero_optimization.stage` is the first `"stage":` after `"zero_optimization":`).
pub(crate) fn locate(text: &str, diags: &mut [Diagnostic]) {
    for d in diags
        .iter_mut()
        .filter(|d| d.line == 0 && !d.path.is_empty())
    {
        let mut at = 0;
        for part in d.path.split('.') {
            match key_at(text, at, part) {
                Some(p) => at = p,
                None => break,
            }
        }
        if at > 0 {
            let before = &text[..at];
            let line_start = before.rfind('\n').map_or(0, |n| n + 1);
            d.line = u32::try_from(before.matches('\n').count() + 1).unwrap_or(0);
            d.column = u32::try_from(before[line_start..].chars().count() + 1).unwrap_or(0);
        }
    }
}

/// Where `"key"` followed by a colon first starts at or after `from`.
fn key_at(text: &str, from: usize, key: &str) -> Option<usize> {
    let quoted = serde_json::to_string(key).ok()?;
    let mut i = from;
    while let Some(off) = text.get(i..)?.find(&quoted) {
        let start = i + off;
        let after = start + quoted.len();
        if text[after..].trim_start().starts_with(':') {
            return Some(start);
        }
        i = after;
    }
    None
}
