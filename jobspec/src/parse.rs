//! Reads a value tree into a `JobSpec`, reporting every unknown key, wrong type and bad word.
//!
//! Reading never stops at the first problem: a field that cannot be read gets its default and a
//! diagnostic, so one pass reports everything. Missing required fields make the result `None`.

use crate::catalog;
use crate::diag::{Code, Diagnostic, Span, did_you_mean, hint};
use crate::node::{Key, Node, Val};
use crate::spec::*;

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
pub(crate) const DATA_KEYS: &[&str] = &["dataset", "tokens", "seq_len"];
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
        if self.diags.len() < 500 {
            self.diags.push(d);
        }
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
                let suggestion = did_you_mean(&k.name, known.iter().copied())
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
        let tables: [(&str, &[&str]); 5] = [
            ("data.", DATA_KEYS),
            ("train.", TRAIN_KEYS),
            ("parallel.", PARALLEL_KEYS),
            ("resources.", RESOURCES_KEYS),
            ("estimate.", ESTIMATE_KEYS),
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
        if !f.is_finite() || f < min || f > max {
            self.push(
                Diagnostic::error(
                    Code::OutOfRange,
                    &path,
                    format!("`{path}` = {f} is out of range ({min} to {max})"),
                    format!("`{path}` = {f} 超出范围（{min} 到 {max}）"),
                )
                .with_span(node.span),
            );
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

    /// Reads the whole spec. `None` when a required key is missing or unreadable.
    pub fn spec(&mut self, root: &Node) -> Option<JobSpec> {
        let t = self.table(root, "", ROOT_KEYS)?;
        let name = self.string(&t, "name").map(|(s, _)| s);
        if t.get("name").is_none() {
            self.missing(&t, "name", "\"my-job\"");
        }
        let task = self.word(&t, "task", &Task::ALL, Task::from_word);
        if t.get("task").is_none() {
            self.missing(&t, "task", "\"sft\"");
        }
        let backend = self
            .word(&t, "backend", &Backend::ALL, Backend::from_word)
            .unwrap_or_default();
        let model = match t.get("model") {
            Some(node) => self.model(node),
            None => {
                self.missing(&t, "model", "\"qwen2.5-7b\"");
                None
            }
        };
        let data = self.sub(&t, "data", DATA_KEYS, Self::data, true).flatten();
        let resources = self
            .sub(&t, "resources", RESOURCES_KEYS, Self::resources, true)
            .flatten();
        let card_is_cpu = resources.as_ref().is_some_and(|r| r.card == "cpu");
        let train = self
            .sub(
                &t,
                "train",
                TRAIN_KEYS,
                |r, tt| r.train(tt, card_is_cpu),
                false,
            )
            .unwrap_or_else(|| TrainSpec {
                precision: if card_is_cpu {
                    Precision::Fp32
                } else {
                    Precision::Bf16
                },
                ..TrainSpec::default()
            });
        let parallel = self
            .sub(&t, "parallel", PARALLEL_KEYS, Self::parallel, false)
            .unwrap_or_default();
        let estimate = self
            .sub(&t, "estimate", ESTIMATE_KEYS, Self::estimate, false)
            .unwrap_or_default();
        Some(JobSpec {
            name: name?,
            task: task?,
            backend,
            model: model?,
            data: data?,
            train,
            parallel,
            resources: resources?,
            estimate,
        })
    }

    /// Reads a sub-table with `read`, reporting it missing when `required`.
    fn sub<T>(
        &mut self,
        t: &Table<'_>,
        key: &str,
        known: &[&str],
        read: impl FnOnce(&mut Self, &Table<'_>) -> T,
        required: bool,
    ) -> Option<T> {
        match t.get(key) {
            Some(node) => {
                let table = self.table(node, key, known)?;
                Some(read(self, &table))
            }
            None => {
                if required {
                    self.missing(t, key, "{ … }");
                }
                None
            }
        }
    }

    fn model(&mut self, node: &Node) -> Option<ModelRef> {
        match &node.val {
            Val::Str(id) => self.model_id(id, node.span),
            Val::Table(_) => {
                let t = self.table(node, "model", MODEL_KEYS)?;
                if let Some((id, span)) = self.string(&t, "id") {
                    if t.entries.len() > 1 {
                        self.push(
                            Diagnostic::error(
                                Code::Conflict,
                                "model",
                                "give either `model.id` or architecture numbers, not both",
                                "`model.id` 与自定义结构参数只能二选一",
                            )
                            .with_span(t.span),
                        );
                    }
                    return self.model_id(&id, span);
                }
                let num = |r: &mut Self, key: &str, max: u32| {
                    let v = r.uint32(&t, key, 1, max);
                    if t.get(key).is_none() {
                        r.missing(&t, key, "32");
                    }
                    v
                };
                let layers = num(self, "layers", 1024);
                let hidden = num(self, "hidden", 1 << 17);
                let heads = num(self, "heads", 1024);
                let kv_heads = num(self, "kv_heads", 1024);
                let ffn = num(self, "ffn", 1 << 20);
                let vocab = num(self, "vocab", 1 << 24);
                let name = self.string(&t, "name").map(|(s, _)| s).unwrap_or_default();
                let tied_embeddings = self.boolean(&t, "tied_embeddings").unwrap_or(false);
                let qkv_bias = self.boolean(&t, "qkv_bias").unwrap_or(false);
                Some(ModelRef::Custom(CustomModel {
                    name,
                    layers: layers?,
                    hidden: hidden?,
                    heads: heads?,
                    kv_heads: kv_heads?,
                    ffn: ffn?,
                    vocab: vocab?,
                    tied_embeddings,
                    qkv_bias,
                }))
            }
            _ => {
                self.wrong_type(node, "model", "a model id or a [model] table");
                None
            }
        }
    }

    fn model_id(&mut self, id: &str, span: Option<Span>) -> Option<ModelRef> {
        match catalog::model(id) {
            Some(m) => Some(ModelRef::Id(m.id.to_string())),
            None => {
                self.push(
                    Diagnostic::error(
                        Code::UnknownModel,
                        "model",
                        format!("unknown model `{id}`; known: {}", ids(catalog::model_ids())),
                        format!("未知的模型 `{id}`；可选：{}", ids(catalog::model_ids())),
                    )
                    .with_span(span)
                    .with_help(hint(did_you_mean(id, catalog::model_ids()))),
                );
                None
            }
        }
    }

    fn data(&mut self, t: &Table<'_>) -> Option<DataSpec> {
        let dataset = self.string(t, "dataset").map(|(s, _)| s);
        if t.get("dataset").is_none() {
            self.missing(t, "dataset", "\"alpaca-zh\"");
        }
        let tokens = self.uint(t, "tokens", 1, 1_000_000_000_000_000);
        let seq_len = self.uint32(t, "seq_len", 1, MAX_SEQ_LEN as u32);
        if t.get("seq_len").is_none() {
            self.missing(t, "seq_len", "4096");
        }
        Some(DataSpec {
            dataset: dataset?,
            tokens,
            seq_len: seq_len?,
        })
    }

    fn train(&mut self, t: &Table<'_>, card_is_cpu: bool) -> TrainSpec {
        let d = TrainSpec::default();
        let grad_checkpointing = match t.get("grad_checkpointing") {
            None => d.grad_checkpointing,
            Some(node) => match &node.val {
                Val::Bool(true) => Recompute::Full,
                Val::Bool(false) => Recompute::None,
                Val::Str(s) if s == "full" => Recompute::Full,
                Val::Str(s) if s == "selective" => Recompute::Selective,
                Val::Str(s) if s == "none" => Recompute::None,
                Val::Str(s) => {
                    self.push(
                        Diagnostic::error(
                            Code::BadValue,
                            "train.grad_checkpointing",
                            format!("`train.grad_checkpointing` = \"{s}\" is not one of: true, false, \"full\", \"selective\", \"none\""),
                            format!("`train.grad_checkpointing` = \"{s}\" 不是以下之一：true、false、\"full\"、\"selective\"、\"none\""),
                        )
                        .with_span(node.span)
                        .with_help(hint(did_you_mean(s, ["full", "selective", "none"]))),
                    );
                    d.grad_checkpointing
                }
                _ => {
                    self.wrong_type(
                        node,
                        "train.grad_checkpointing",
                        "true, false, \"full\", \"selective\" or \"none\"",
                    );
                    d.grad_checkpointing
                }
            },
        };
        let default_precision = if card_is_cpu {
            Precision::Fp32
        } else {
            d.precision
        };
        TrainSpec {
            epochs: self.float(t, "epochs", 1e-6, 1e6),
            steps: self.uint(t, "steps", 1, 1_000_000_000_000),
            micro_batch: self.uint32(t, "micro_batch", 1, 65_536).unwrap_or(1),
            grad_accum: self.uint32(t, "grad_accum", 1, 65_536).unwrap_or(1),
            lr: self.float(t, "lr", 0.0, 10.0).unwrap_or(d.lr),
            warmup: self.uint(t, "warmup", 0, 1_000_000_000_000).unwrap_or(0),
            schedule: self
                .word(t, "schedule", &Schedule::ALL, Schedule::from_word)
                .unwrap_or(d.schedule),
            precision: self
                .word(t, "precision", &Precision::ALL, Precision::from_word)
                .unwrap_or(default_precision),
            grad_checkpointing,
            flash_attention: self.boolean(t, "flash_attention").unwrap_or(true),
            optimizer: self
                .word(t, "optimizer", &Optimizer::ALL, Optimizer::from_word)
                .unwrap_or(d.optimizer),
            lora_rank: self.uint32(t, "lora_rank", 1, 4096),
            lora_alpha: self.uint32(t, "lora_alpha", 1, 65_536),
            lora_targets: self.string_list(t, "lora_targets"),
        }
    }

    fn parallel(&mut self, t: &Table<'_>) -> ParallelSpec {
        let zero_stage = self
            .uint(t, "zero_stage", 0, 3)
            .and_then(|n| u8::try_from(n).ok())
            .unwrap_or(0);
        ParallelSpec {
            zero_stage,
            offload_optimizer: self
                .word(t, "offload_optimizer", &Offload::ALL, Offload::from_word)
                .unwrap_or(Offload::None),
            offload_params: self
                .word(t, "offload_params", &Offload::ALL, Offload::from_word)
                .unwrap_or(Offload::None),
            tp: self.uint32(t, "tp", 1, 1024).unwrap_or(1),
            pp: self.uint32(t, "pp", 1, 1024).unwrap_or(1),
            sp: self.uint32(t, "sp", 1, 1024).unwrap_or(1),
        }
    }

    fn resources(&mut self, t: &Table<'_>) -> Option<ResourcesSpec> {
        let card = match self.string(t, "card") {
            Some((id, span)) => match catalog::card(&id) {
                Some(c) => Some(c.id.to_string()),
                None => {
                    self.push(
                        Diagnostic::error(
                            Code::UnknownCard,
                            "resources.card",
                            format!("unknown card `{id}`; known: {}", ids(catalog::card_ids())),
                            format!("未知的卡型 `{id}`；可选：{}", ids(catalog::card_ids())),
                        )
                        .with_span(span)
                        .with_help(hint(did_you_mean(&id, catalog::card_ids()))),
                    );
                    None
                }
            },
            None => {
                if t.get("card").is_none() {
                    self.missing(t, "card", "\"a100-80g\"");
                }
                None
            }
        };
        let time_limit = match self.string(t, "time_limit") {
            Some((s, span)) => {
                if parse_duration_s(&s).is_none_or(|secs| secs == 0) {
                    self.push(
                        Diagnostic::error(
                            Code::BadDuration,
                            "resources.time_limit",
                            format!("cannot read time_limit \"{s}\"; write e.g. \"24h\", \"30m\", \"1h30m\" or \"2d\""),
                            format!("无法识别 time_limit \"{s}\"；请写成 \"24h\"、\"30m\"、\"1h30m\" 或 \"2d\""),
                        )
                        .with_span(span),
                    );
                }
                s
            }
            None => "24h".to_string(),
        };
        Some(ResourcesSpec {
            card: card?,
            cards_per_node: self.uint32(t, "cards_per_node", 1, 64).unwrap_or(1),
            nodes: self.uint32(t, "nodes", 1, 4096).unwrap_or(1),
            time_limit,
        })
    }

    fn estimate(&mut self, t: &Table<'_>) -> EstimateSpec {
        let claimed_time = self.string(t, "claimed_time").map(|(s, span)| {
            if parse_duration_s(&s).is_none_or(|secs| secs == 0) {
                self.push(
                    Diagnostic::error(
                        Code::BadDuration,
                        "estimate.claimed_time",
                        format!("cannot read claimed_time \"{s}\"; write e.g. \"30h\""),
                        format!("无法识别 claimed_time \"{s}\"；请写成 \"30h\" 这样的形式"),
                    )
                    .with_span(span),
                );
            }
            s
        });
        EstimateSpec {
            mfu: self.float(t, "mfu", 0.01, 1.0),
            claimed_time,
        }
    }
}

/// Every `table.key` name, so that hints can be `&'static str`.
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
];

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
