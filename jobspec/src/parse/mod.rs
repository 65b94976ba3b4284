//! Reads a value tree into a `JobSpec`, reporting every unknown key, wrong type and bad word.
//!
//! Reading never stops at the first problem: a field that cannot be read gets its default and a
//! diagnostic, so one pass reports everything. Missing required fields make the result `None`.

use crate::catalog;
use crate::diag::{Code, Diagnostic, Span, did_you_mean, hint, id_hint};
use crate::node::{Key, Node, Val};
use crate::spec::*;

mod eval;
mod sections;

/// The keys each table accepts. `schema` tests check these against the serde types.
pub(crate) const ROOT_KEYS: &[&str] = &[
    "name",
    "task",
    "backend",
    "model",
    "data",
    "train",
    "parallel",
    "resources",
    "estimate",
    "checkpoint",
    "output",
    "eval",
    "deepspeed",
];
pub(crate) const MODEL_KEYS: &[&str] = &[
    "id",
    "name",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "tied_embeddings",
    "qkv_bias",
];
pub(crate) const DATA_KEYS: &[&str] = &["dataset", "tokens", "examples", "seq_len"];
pub(crate) const TRAIN_KEYS: &[&str] = &[
    "epochs",
    "steps",
    "micro_batch",
    "grad_accum",
    "lr",
    "warmup",
    "schedule",
    "precision",
    "grad_checkpointing",
    "flash_attention",
    "optimizer",
    "lora_rank",
    "lora_alpha",
    "lora_targets",
    "seed",
    "weight_decay",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "momentum",
    "max_grad_norm",
];
pub(crate) const PARALLEL_KEYS: &[&str] = &[
    "zero_stage",
    "offload_optimizer",
    "offload_params",
    "tp",
    "pp",
    "sp",
];
pub(crate) const RESOURCES_KEYS: &[&str] = &["card", "cards_per_node", "nodes", "time_limit"];
pub(crate) const ESTIMATE_KEYS: &[&str] = &["mfu", "claimed_time"];
pub(crate) const CHECKPOINT_KEYS: &[&str] = &[
    "every_steps",
    "every_minutes",
    "keep",
    "resume",
    "resume_from",
    "upload",
];
pub(crate) const OUTPUT_KEYS: &[&str] = &["merge_adapter", "report_to"];

/// The ranges of the optimizer's numbers in `[train]` (the reader's, the form check's and the
/// schema's): a β or a momentum of 1 never forgets, an ε of 0 may divide by zero.
pub(crate) const OPTIM_RANGES: [(&str, f64, f64); 6] = [
    ("weight_decay", 0.0, 10.0),
    ("adam_beta1", 0.0, MAX_BETA),
    ("adam_beta2", 0.0, MAX_BETA),
    ("adam_epsilon", 1e-12, 1.0),
    ("momentum", 0.0, MAX_BETA),
    ("max_grad_norm", 0.0, 1e6),
];
const MAX_BETA: f64 = 0.999_999;

/// The range of `train.lr`, its lower end left out: a rate of 0 trains nothing, and tiny-train's
/// command refuses it.
pub(crate) const LR_RANGE: (f64, f64) = (0.0, 10.0);

/// The longest sequence a spec may ask for.
pub const MAX_SEQ_LEN: u64 = 131_072;

pub(crate) struct Reader {
    pub diags: Vec<Diagnostic>,
}

/// A table's entries, after unknown keys were reported.
pub(crate) struct Table<'a> {
    path: String,
    span: Option<Span>,
    entries: Vec<(&'a Key, &'a Node)>,
}

impl<'a> Table<'a> {
    fn get(&self, key: &str) -> Option<&'a Node> {
        // The last occurrence wins, as in JSON; TOML rejects duplicates itself.
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| *v)
    }

    fn path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }
}

impl Reader {
    pub fn new() -> Self {
        Reader { diags: Vec::new() }
    }

    fn push(&mut self, d: Diagnostic) {
        // A pathological input could produce a diagnostic per byte; a few hundred say enough.
        crate::diag::push_capped(&mut self.diags, d);
    }

    /// Opens `node` as a table, reporting keys not in `known`.
    fn table<'a>(&mut self, node: &'a Node, path: &str, known: &[&str]) -> Option<Table<'a>> {
        let Val::Table(entries) = &node.val else {
            self.wrong_type(node, path, "a table");
            return None;
        };
        let mut kept = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            if known.contains(&k.name.as_str()) {
                kept.push((k, v));
            } else {
                let full = if path.is_empty() {
                    k.name.clone()
                } else {
                    format!("{path}.{}", k.name)
                };
                let suggestion = alias_hint(&k.name, path)
                    .or_else(|| did_you_mean(&k.name, known.iter().copied()))
                    .or_else(|| self.misplaced_hint(&k.name));
                let where_en = if path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in [{path}]")
                };
                let where_zh = if path.is_empty() {
                    "顶层".to_string()
                } else {
                    format!("[{path}] 中")
                };
                self.push(
                    Diagnostic::error(
                        Code::UnknownKey,
                        &full,
                        format!("unknown key `{}` {where_en}", k.name),
                        format!("{where_zh}有未知的键 `{}`", k.name),
                    )
                    .with_span(k.span.or(v.span))
                    .with_help(hint(suggestion)),
                );
            }
        }
        Some(Table {
            path: path.to_string(),
            span: node.span,
            entries: kept,
        })
    }

    /// A key that belongs in another table ("seq_len" at the top level) gets that table named.
    fn misplaced_hint(&self, key: &str) -> Option<&'static str> {
        let tables: [(&str, &[&str]); 9] = [
            ("data.", DATA_KEYS),
            ("train.", TRAIN_KEYS),
            ("parallel.", PARALLEL_KEYS),
            ("resources.", RESOURCES_KEYS),
            ("estimate.", ESTIMATE_KEYS),
            ("checkpoint.", CHECKPOINT_KEYS),
            ("output.", OUTPUT_KEYS),
            ("eval.", EVAL_KEYS),
            ("deepspeed.", ZERO_TUNING_KEYS),
        ];
        for (prefix, keys) in tables {
            if let Some(k) = keys.iter().find(|k| **k == key) {
                // Leak-free: build the "table.key" name from the static lists.
                return QUALIFIED
                    .iter()
                    .find(|q| q.strip_prefix(prefix) == Some(k))
                    .copied();
            }
        }
        None
    }

    fn wrong_type(&mut self, node: &Node, path: &str, expected: &str) {
        self.push(
            Diagnostic::error(
                Code::WrongType,
                path,
                format!("`{path}` must be {expected}, found {}", node.type_name()),
                format!(
                    "`{path}` 应为{}，实际是 {}",
                    zh_kind(expected),
                    node.type_name()
                ),
            )
            .with_span(node.span),
        );
    }

    /// An info that a key left out takes its default, at the table's start.
    fn defaulted(&mut self, t: &Table<'_>, key: &str, en: String, zh: String) {
        let path = t.path(key);
        self.push(
            Diagnostic::info(Code::Defaulted, &path, en, zh).with_span(t.span.map(|s| Span {
                start: s.start,
                end: s.start,
            })),
        );
    }

    fn missing(&mut self, t: &Table<'_>, key: &str, example: &str) {
        let path = t.path(key);
        self.push(
            Diagnostic::error(
                Code::MissingKey,
                &path,
                format!("missing required key `{path}` (for example `{key} = {example}`)"),
                format!("缺少必填的键 `{path}`（例如 `{key} = {example}`）"),
            )
            .with_span(t.span.map(|s| Span {
                start: s.start,
                end: s.start,
            })),
        );
    }

    fn string(&mut self, t: &Table<'_>, key: &str) -> Option<(String, Option<Span>)> {
        let node = t.get(key)?;
        match &node.val {
            Val::Str(s) => Some((s.clone(), node.span)),
            _ => {
                self.wrong_type(node, &t.path(key), "a string");
                None
            }
        }
    }

    fn uint(&mut self, t: &Table<'_>, key: &str, min: u64, max: u64) -> Option<u64> {
        let node = t.get(key)?;
        let path = t.path(key);
        let n = match node.val {
            Val::Int(i) => i128::from(i),
            // 1e9 written as a float is a fine token count if it is a whole number.
            Val::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => f as i128,
            _ => {
                self.wrong_type(node, &path, "a whole number");
                return None;
            }
        };
        if n < i128::from(min) || n > i128::from(max) {
            self.push(
                Diagnostic::error(
                    Code::OutOfRange,
                    &path,
                    format!("`{path}` = {n} is out of range ({min} to {max})"),
                    format!("`{path}` = {n} 超出范围（{min} 到 {max}）"),
                )
                .with_span(node.span),
            );
            return None;
        }
        u64::try_from(n).ok()
    }

    fn uint32(&mut self, t: &Table<'_>, key: &str, min: u32, max: u32) -> Option<u32> {
        self.uint(t, key, u64::from(min), u64::from(max))
            .and_then(|n| u32::try_from(n).ok())
    }

    fn float(&mut self, t: &Table<'_>, key: &str, min: f64, max: f64) -> Option<f64> {
        self.float_in(t, key, (min, max), false)
    }

    /// A number above `above` (not equal to it) and at most `max`.
    fn float_above(&mut self, t: &Table<'_>, key: &str, (above, max): (f64, f64)) -> Option<f64> {
        self.float_in(t, key, (above, max), true)
    }

    fn float_in(
        &mut self,
        t: &Table<'_>,
        key: &str,
        (min, max): (f64, f64),
        min_excluded: bool,
    ) -> Option<f64> {
        let node = t.get(key)?;
        let path = t.path(key);
        let f = match node.val {
            Val::Int(i) => i as f64,
            Val::Float(f) => f,
            _ => {
                self.wrong_type(node, &path, "a number");
                return None;
            }
        };
        let below = if min_excluded { f <= min } else { f < min };
        if !f.is_finite() || below || f > max {
            let (en, zh) = if min_excluded {
                out_of_range_above(&path, f, (min, max))
            } else {
                (
                    format!("`{path}` = {f} is out of range ({min} to {max})"),
                    format!("`{path}` = {f} 超出范围（{min} 到 {max}）"),
                )
            };
            self.push(Diagnostic::error(Code::OutOfRange, &path, en, zh).with_span(node.span));
            return None;
        }
        Some(f)
    }

    fn boolean(&mut self, t: &Table<'_>, key: &str) -> Option<bool> {
        let node = t.get(key)?;
        match node.val {
            Val::Bool(b) => Some(b),
            _ => {
                self.wrong_type(node, &t.path(key), "true or false");
                None
            }
        }
    }

    /// A string that must be one of `words`; returns the word as written when it is one.
    fn word<T>(
        &mut self,
        t: &Table<'_>,
        key: &str,
        words: &[&str],
        from: fn(&str) -> Option<T>,
    ) -> Option<T> {
        let (s, span) = self.string(t, key)?;
        if let Some(v) = from(&s) {
            return Some(v);
        }
        let path = t.path(key);
        let list = words.join(", ");
        if path == "backend" && s.eq_ignore_ascii_case("ray") {
            // Ray is asked for by name; say that it does not exist yet rather than "not one of".
            self.push(
                Diagnostic::error(
                    Code::BadValue,
                    &path,
                    format!(
                        "`backend` = \"{s}\": Onramp has no Ray backend yet; use one of: {list}"
                    ),
                    format!(
                        "`backend` = \"{s}\"：Onramp 目前还没有 Ray 后端；请用以下之一：{list}"
                    ),
                )
                .with_span(span),
            );
            return None;
        }
        self.push(
            Diagnostic::error(
                Code::BadValue,
                &path,
                format!("`{path}` = \"{s}\" is not one of: {list}"),
                format!("`{path}` = \"{s}\" 不是以下之一：{list}"),
            )
            .with_span(span)
            .with_help(hint(did_you_mean(&s, words.iter().copied()))),
        );
        None
    }

    fn string_list(&mut self, t: &Table<'_>, key: &str) -> Option<Vec<String>> {
        let node = t.get(key)?;
        let path = t.path(key);
        let Val::Arr(items) = &node.val else {
            self.wrong_type(node, &path, "an array of strings");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match &item.val {
                Val::Str(s) => out.push(s.clone()),
                _ => self.wrong_type(item, &path, "a string"),
            }
        }
        Some(out)
    }
}

/// Every `table.key` name, so that hints can be `&'static str`.
/// The names other tools (Transformers' `TrainingArguments`, LLaMA-Factory, axolotl, launchers)
/// give to our keys, lower-cased, with the key each means.
const ALIASES: &[(&str, &str)] = &[
    ("learning_rate", "train.lr"),
    ("batch_size", "train.micro_batch"),
    ("micro_batch_size", "train.micro_batch"),
    ("per_device_train_batch_size", "train.micro_batch"),
    ("train_micro_batch_size_per_gpu", "train.micro_batch"),
    ("gradient_accumulation_steps", "train.grad_accum"),
    ("gradient_accumulation", "train.grad_accum"),
    ("num_train_epochs", "train.epochs"),
    ("num_epochs", "train.epochs"),
    ("max_steps", "train.steps"),
    ("warmup_steps", "train.warmup"),
    ("lr_scheduler_type", "train.schedule"),
    ("lr_scheduler", "train.schedule"),
    ("gradient_checkpointing", "train.grad_checkpointing"),
    ("lora_r", "train.lora_rank"),
    ("gpus", "resources.cards_per_node"),
    ("num_gpus", "resources.cards_per_node"),
    ("n_gpus", "resources.cards_per_node"),
    ("gpus_per_node", "resources.cards_per_node"),
    ("nproc_per_node", "resources.cards_per_node"),
    ("num_nodes", "resources.nodes"),
    ("nnodes", "resources.nodes"),
    ("gpu", "resources.card"),
    ("gpu_type", "resources.card"),
    ("sequence_length", "data.seq_len"),
    ("seq_length", "data.seq_len"),
    ("max_seq_length", "data.seq_len"),
    ("max_seq_len", "data.seq_len"),
    ("max_length", "data.seq_len"),
    ("cutoff_len", "data.seq_len"),
    ("sequence_len", "data.seq_len"),
    ("gradient_clipping", "train.max_grad_norm"),
    ("grad_clip", "train.max_grad_norm"),
    ("clip_grad_norm", "train.max_grad_norm"),
    ("beta1", "train.adam_beta1"),
    ("beta2", "train.adam_beta2"),
    ("eps", "train.adam_epsilon"),
    ("adam_eps", "train.adam_epsilon"),
    ("zero_optimization", "deepspeed"),
    ("eval_steps", "eval.every_steps"),
    ("eval_dataset", "eval.dataset"),
    ("val_set_size", "eval.holdout"),
    ("model_name_or_path", "model"),
    ("base_model", "model"),
];

/// The key another tool's name means: bare inside its own table, qualified anywhere else
/// (`batch_size` in `[train]` is `micro_batch`; at the top level, `train.micro_batch`).
fn alias_hint(key: &str, path: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let (_, target) = ALIASES.iter().find(|(a, _)| *a == lower)?;
    match target.split_once('.') {
        Some((table, bare)) if table == path => Some(bare),
        _ => Some(target),
    }
}

const QUALIFIED: &[&str] = &[
    "data.dataset",
    "data.tokens",
    "data.seq_len",
    "train.epochs",
    "train.steps",
    "train.micro_batch",
    "train.grad_accum",
    "train.lr",
    "train.warmup",
    "train.schedule",
    "train.precision",
    "train.grad_checkpointing",
    "train.flash_attention",
    "train.optimizer",
    "train.lora_rank",
    "train.lora_alpha",
    "train.lora_targets",
    "train.seed",
    "train.weight_decay",
    "train.adam_beta1",
    "train.adam_beta2",
    "train.adam_epsilon",
    "train.momentum",
    "train.max_grad_norm",
    "parallel.zero_stage",
    "parallel.offload_optimizer",
    "parallel.offload_params",
    "parallel.tp",
    "parallel.pp",
    "parallel.sp",
    "resources.card",
    "resources.cards_per_node",
    "resources.nodes",
    "resources.time_limit",
    "estimate.mfu",
    "estimate.claimed_time",
    "checkpoint.every_steps",
    "checkpoint.every_minutes",
    "checkpoint.keep",
    "checkpoint.resume",
    "checkpoint.resume_from",
    "output.merge_adapter",
    "output.report_to",
    "eval.holdout",
    "eval.dataset",
    "eval.every_steps",
    "eval.max_examples",
    "eval.tasks",
    "eval.prompts",
    "eval.max_new_tokens",
    "deepspeed.reduce_bucket_size",
    "deepspeed.allgather_bucket_size",
    "deepspeed.overlap_comm",
    "deepspeed.contiguous_gradients",
    "deepspeed.reduce_scatter",
    "deepspeed.allgather_partitions",
    "deepspeed.round_robin_gradients",
    "deepspeed.sub_group_size",
    "deepspeed.stage3_prefetch_bucket_size",
    "deepspeed.stage3_param_persistence_threshold",
    "deepspeed.stage3_max_live_parameters",
    "deepspeed.stage3_max_reuse_distance",
];

/// Why `value` at `path` is out of a range whose lower end is left out, in English and Chinese
/// (the reader's words, and the form check's).
pub(crate) fn out_of_range_above(
    path: &str,
    value: f64,
    (above, max): (f64, f64),
) -> (String, String) {
    (
        format!("`{path}` = {value} is out of range (more than {above}, at most {max})"),
        format!("`{path}` = {value} 超出范围（须大于 {above}，至多 {max}）"),
    )
}

fn ids(it: impl Iterator<Item = &'static str>) -> String {
    it.collect::<Vec<_>>().join(", ")
}

fn zh_kind(expected: &str) -> String {
    match expected {
        "a table" => "表".to_string(),
        "a string" => "字符串".to_string(),
        "a whole number" => "整数".to_string(),
        "a number" => "数字".to_string(),
        "true or false" => "true 或 false".to_string(),
        "an array of strings" => "字符串数组".to_string(),
        other => other.to_string(),
    }
}
