//! Reading each table of the spec: `[model]`, `[data]`, `[train]`, `[parallel]`,
//! `[resources]` and `[estimate]`.

use super::*;

impl Reader {
    /// Reads the whole spec. `None` when a required key is missing or unreadable.
    pub(crate) fn spec(&mut self, root: &Node) -> Option<JobSpec> {
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
        let checkpoint = self
            .sub(&t, "checkpoint", CHECKPOINT_KEYS, Self::checkpoint, false)
            .unwrap_or_default();
        let output = self
            .sub(&t, "output", OUTPUT_KEYS, Self::output, false)
            .unwrap_or_default();
        let eval = self
            .sub(&t, "eval", EVAL_KEYS, Self::eval, false)
            .unwrap_or_default();
        let deepspeed = self
            .sub(&t, "deepspeed", ZERO_TUNING_KEYS, Self::zero_tuning, false)
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
            checkpoint,
            output,
            eval,
            deepspeed,
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
            // A Hugging Face repo id names its catalogue entry.
            None if let Some(m) = catalog::model_by_repo(id) => {
                self.push(
                    Diagnostic::info(
                        Code::Defaulted,
                        "model",
                        format!("`{id}` is the catalogue's `{}` ({})", m.id, m.display),
                        format!("`{id}` 即目录中的 `{}`（{}）", m.id, m.display),
                    )
                    .with_span(span),
                );
                Some(ModelRef::Id(m.id.to_string()))
            }
            None => {
                self.push(
                    Diagnostic::error(
                        Code::UnknownModel,
                        "model",
                        format!("unknown model `{id}`; known: {}", ids(catalog::model_ids())),
                        format!("未知的模型 `{id}`；可选：{}", ids(catalog::model_ids())),
                    )
                    .with_span(span)
                    .with_help(id_hint(id, &catalog::model_ids().collect::<Vec<_>>())),
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
        let examples = self.uint(t, "examples", 1, 1_000_000_000_000);
        let seq_len = self.uint32(t, "seq_len", 1, MAX_SEQ_LEN as u32);
        if t.get("seq_len").is_none() {
            self.missing(t, "seq_len", "4096");
        }
        Some(DataSpec {
            dataset: dataset?,
            tokens,
            examples,
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
        let [
            weight_decay,
            adam_beta1,
            adam_beta2,
            adam_epsilon,
            momentum,
            max_grad_norm,
        ] = OPTIM_RANGES.map(|(key, min, max)| self.float(t, key, min, max));
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
            lr: self.float_above(t, "lr", LR_RANGE).unwrap_or(d.lr),
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
            seed: self
                .uint(t, "seed", 0, u64::from(u32::MAX))
                .unwrap_or(DEFAULT_SEED),
            weight_decay,
            adam_beta1,
            adam_beta2,
            adam_epsilon,
            momentum,
            max_grad_norm,
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
                        .with_help(id_hint(&id, &catalog::card_ids().collect::<Vec<_>>())),
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
        // Checked here so it is reported even when another error stops validation, and again by
        // the rules for form-built specs; `locate` drops the duplicate.
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
            None => {
                self.defaulted(
                    t,
                    "time_limit",
                    format!("time_limit not given: using {DEFAULT_TIME_LIMIT}; the hold on the balance is for the whole time limit"),
                    format!("未给出 time_limit：使用 {DEFAULT_TIME_LIMIT}；余额按整个时间上限冻结"),
                );
                DEFAULT_TIME_LIMIT.to_string()
            }
        };
        self.defaulted_cards(t, card.as_deref());
        Some(ResourcesSpec {
            card: card?,
            cards_per_node: self
                .uint32(t, "cards_per_node", 1, 64)
                .unwrap_or(DEFAULT_CARDS_PER_NODE),
            nodes: self.uint32(t, "nodes", 1, 4096).unwrap_or(DEFAULT_NODES),
            time_limit,
        })
    }

    /// What a GPU job is charged for, said when it is the default (on a CPU it is one machine).
    fn defaulted_cards(&mut self, t: &Table<'_>, card: Option<&str>) {
        if !card.and_then(catalog::card).is_some_and(|c| c.is_gpu) {
            return;
        }
        if t.get("cards_per_node").is_none() {
            self.defaulted(
                t,
                "cards_per_node",
                format!("cards_per_node not given: using {DEFAULT_CARDS_PER_NODE} card per node"),
                format!("未给出 cards_per_node：每个节点使用 {DEFAULT_CARDS_PER_NODE} 张卡"),
            );
        }
        if t.get("nodes").is_none() {
            self.defaulted(
                t,
                "nodes",
                format!("nodes not given: using {DEFAULT_NODES} node"),
                format!("未给出 nodes：使用 {DEFAULT_NODES} 个节点"),
            );
        }
    }

    fn checkpoint(&mut self, t: &Table<'_>) -> CheckpointSpec {
        let d = CheckpointSpec::default();
        CheckpointSpec {
            every_steps: self
                .uint(t, "every_steps", 1, 1_000_000_000)
                .unwrap_or(d.every_steps),
            every_minutes: self
                .uint(t, "every_minutes", 0, 7 * 24 * 60)
                .unwrap_or(d.every_minutes),
            keep: self.uint32(t, "keep", 1, 1000).unwrap_or(d.keep),
            resume: self.boolean(t, "resume").unwrap_or(d.resume),
            resume_from: self.job_id(t, "resume_from"),
            upload: self.boolean(t, "upload").unwrap_or(d.upload),
        }
    }

    /// A job's id, as the edge gives them (`onramp jobs` lists them): lower-case hex.
    fn job_id(&mut self, t: &Table<'_>, key: &str) -> Option<String> {
        let (id, span) = self.string(t, key)?;
        if crate::validate::is_job_id(&id) {
            return Some(id);
        }
        let path = t.path(key);
        let (en, zh) = crate::validate::not_a_job_id(&path, &id);
        self.push(Diagnostic::error(Code::BadValue, &path, en, zh).with_span(span));
        None
    }

    fn output(&mut self, t: &Table<'_>) -> OutputSpec {
        let mut report_to = Vec::new();
        for word in self.string_list(t, "report_to").unwrap_or_default() {
            match ReportTo::from_word(&word) {
                Some(r) if !report_to.contains(&r) => report_to.push(r),
                Some(_) => {}
                None => {
                    let span = t.get("report_to").and_then(|n| n.span);
                    self.push(
                        Diagnostic::error(
                            Code::BadValue,
                            "output.report_to",
                            format!(
                                "`output.report_to` has \"{word}\"; known: {}",
                                ReportTo::ALL.join(", ")
                            ),
                            format!(
                                "`output.report_to` 中的 \"{word}\" 无法识别；可选：{}",
                                ReportTo::ALL.join("、")
                            ),
                        )
                        .with_span(span)
                        .with_help(hint(did_you_mean(&word, ReportTo::ALL))),
                    );
                }
            }
        }
        OutputSpec {
            merge_adapter: self.boolean(t, "merge_adapter").unwrap_or(false),
            report_to,
        }
    }

    fn estimate(&mut self, t: &Table<'_>) -> EstimateSpec {
        let claimed_time = self.string(t, "claimed_time").map(|(s, _)| s);
        EstimateSpec {
            mfu: self.float(t, "mfu", 0.01, 1.0),
            claimed_time,
        }
    }

    /// `[deepspeed]`: sizes are element counts of 1 and up, switches are booleans.
    fn zero_tuning(&mut self, t: &Table<'_>) -> ZeroTuning {
        use crate::zero_tuning::{MAX_ZERO_ELEMENTS, ZERO_SIZE_KEYS};
        let mut z = ZeroTuning::default();
        for key in ZERO_TUNING_KEYS {
            let value = if ZERO_SIZE_KEYS.contains(key) {
                self.uint(t, key, 1, MAX_ZERO_ELEMENTS)
                    .map(serde_json::Value::from)
            } else {
                self.boolean(t, key).map(serde_json::Value::from)
            };
            if let Some(v) = value {
                z.set(key, &v);
            }
        }
        z
    }
}
