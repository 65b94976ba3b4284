//! The job spec as the user writes it (TOML or JSON), with every default filled in.
//!
//! `JobSpec` is what the editor and the form show and what patches change; it may still be
//! invalid. Only `validate` turns it into a `ValidSpec`, which the estimators require.

pub use crate::duration::{format_duration, format_duration_zh, parse_duration_s};
pub use crate::eval_spec::{EVAL_KEYS, EvalSpec};
pub use crate::zero_tuning::{ZERO_TUNING_KEYS, ZeroTuning};
use schemars::JsonSchema;
use serde::Serialize;

/// One training job, as written.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// A short human name for the job.
    pub name: String,
    /// What kind of training: `pretrain`, `sft` (full fine-tuning), `lora`, `qlora` or `tiny-train`.
    pub task: Task,
    /// Where the job should run; `auto` lets the edge pick a backend that has the card.
    #[serde(default)]
    pub backend: Backend,
    /// A catalogue id (`deepseek-llm-7b`, `qwen2.5-7b`, …) or a table of architecture numbers.
    pub model: ModelRef,
    /// The training data: which dataset, how long a sequence is, how many tokens an epoch has.
    pub data: DataSpec,
    /// How to train: steps or epochs, batch, learning rate, precision, LoRA settings.
    #[serde(default)]
    pub train: TrainSpec,
    /// How the work is split over GPUs: ZeRO stage, offload, tensor/pipeline/sequence parallelism.
    #[serde(default)]
    pub parallel: ParallelSpec,
    /// Which card, how many per node, how many nodes, and the wall-clock limit.
    pub resources: ResourcesSpec,
    /// Knobs of the estimate itself.
    #[serde(default)]
    pub estimate: EstimateSpec,
    /// When `onramp-train` saves checkpoints, how many it keeps, and whether it resumes.
    #[serde(default, skip_serializing_if = "CheckpointSpec::is_default")]
    pub checkpoint: CheckpointSpec,
    /// What `onramp-train` writes besides checkpoints.
    #[serde(default, skip_serializing_if = "OutputSpec::is_default")]
    pub output: OutputSpec,
    /// How the run is evaluated while and after it trains: the eval set, how often, the
    /// benchmark tasks scored and the prompts answered, before and after.
    #[serde(default, skip_serializing_if = "EvalSpec::is_default")]
    pub eval: EvalSpec,
    /// DeepSpeed's own ZeRO tuning (bucket, prefetch and persistence sizes), by DeepSpeed's
    /// names; laid over the `zero_optimization` jobspec writes. GPU jobs only.
    #[serde(default, skip_serializing_if = "ZeroTuning::is_default")]
    pub deepspeed: ZeroTuning,
}

impl JobSpec {
    /// The spec as canonical TOML, every key written (comments are not kept; a patch that keeps
    /// the user's text is `patch::apply_patch_toml`). Reading it back gives the same
    /// spec.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// Train every weight from scratch.
    Pretrain,
    /// Supervised full fine-tuning: every weight trains.
    Sft,
    /// Low-rank adapters on a frozen 16-bit base.
    Lora,
    /// Low-rank adapters on a frozen 4-bit (NF4) base.
    Qlora,
    /// Train the in-browser `model-tiny` (llama2.c family) on the local runner.
    TinyTrain,
}

impl Task {
    pub const ALL: [&'static str; 5] = ["pretrain", "sft", "lora", "qlora", "tiny-train"];

    pub fn as_str(self) -> &'static str {
        match self {
            Task::Pretrain => "pretrain",
            Task::Sft => "sft",
            Task::Lora => "lora",
            Task::Qlora => "qlora",
            Task::TinyTrain => "tiny-train",
        }
    }

    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "pretrain" => Task::Pretrain,
            "sft" => Task::Sft,
            "lora" => Task::Lora,
            "qlora" => Task::Qlora,
            "tiny-train" => Task::TinyTrain,
            _ => return None,
        })
    }

    /// Whether only adapter weights train.
    pub fn is_adapter(self) -> bool {
        matches!(self, Task::Lora | Task::Qlora)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    Auto,
    /// The local `onramp-runner` (CPU here).
    Runner,
    /// A Slurm cluster through slurmrestd.
    Slurm,
}

impl Backend {
    pub const ALL: [&'static str; 3] = ["auto", "runner", "slurm"];

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Runner => "runner",
            Backend::Slurm => "slurm",
        }
    }

    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "auto" => Backend::Auto,
            "runner" => Backend::Runner,
            "slurm" => Backend::Slurm,
            _ => return None,
        })
    }
}

/// A model from the catalogue, or a custom architecture.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ModelRef {
    Id(String),
    Custom(CustomModel),
}

/// Architecture numbers of a llama-family decoder (gated MLP, RMSNorm, rotary positions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomModel {
    /// A display name for the custom model.
    #[serde(default)]
    pub name: String,
    /// Number of transformer blocks.
    pub layers: u32,
    /// Width of the residual stream (the embedding size).
    pub hidden: u32,
    /// Attention heads per block.
    pub heads: u32,
    /// Key/value heads (grouped-query attention); equal to `heads` for plain multi-head attention.
    pub kv_heads: u32,
    /// Intermediate size of the gated MLP.
    pub ffn: u32,
    /// Vocabulary size of the tokenizer.
    pub vocab: u32,
    /// Whether the output projection shares the embedding matrix.
    #[serde(default)]
    pub tied_embeddings: bool,
    /// Whether q/k/v projections have biases (Qwen2, ChatGLM3).
    #[serde(default)]
    pub qkv_bias: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DataSpec {
    /// A dataset id or a path on the cluster.
    pub dataset: String,
    /// Tokens in one epoch of the dataset. Needed when training by epochs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Examples in one epoch of a padded dataset (chat, alpaca, prompt/completion: one sequence
    /// each). With it, an epoch is these examples over the global batch, not packed tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<u64>,
    /// Sequence length in tokens, 1 to 131072.
    pub seq_len: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainSpec {
    /// Passes over `data.tokens`; give this or `steps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<f64>,
    /// Optimizer steps; give this or `epochs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    /// Sequences per GPU per forward pass.
    pub micro_batch: u32,
    /// Micro-batches accumulated per optimizer step.
    pub grad_accum: u32,
    /// Peak learning rate.
    pub lr: f64,
    /// Warm-up steps.
    pub warmup: u64,
    /// Learning-rate schedule after warm-up: `cosine`, `linear` or `constant`.
    pub schedule: Schedule,
    /// Number format of weights and activations: `bf16`, `fp16` or `fp32`.
    pub precision: Precision,
    /// Activation recomputation: `true` (= `"full"`: whole layers recomputed) or `false`
    /// (= `"none"`). `"selective"` is read and refused: the trainer does not run it.
    #[schemars(schema_with = "recompute_schema")]
    pub grad_checkpointing: Recompute,
    /// FlashAttention: the s×s attention scores are never stored.
    pub flash_attention: bool,
    /// `adamw` (two fp32 moments per parameter) or `sgd` (one momentum buffer).
    pub optimizer: Optimizer,
    /// Rank of the LoRA matrices (`lora`, `qlora`; default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_rank: Option<u32>,
    /// LoRA scaling numerator: the update is scaled by alpha / rank (default 2 × rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_alpha: Option<u32>,
    /// Layers that get adapters, by the model's own names (Llama, Qwen, Mistral, DeepSeek: `q_proj`
    /// … `down_proj`; ChatGLM: `query_key_value`, `dense`, `dense_h_to_4h`, `dense_4h_to_h`), or
    /// `["all-linear"]`. The attention projections by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_targets: Option<Vec<String>>,
    /// Seed of the weights' initialisation, the data order and every other random choice.
    #[serde(default = "default_seed", skip_serializing_if = "is_default_seed")]
    pub seed: u64,
    /// Decoupled weight decay (default 0.1 with `adamw`, 0 with `sgd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_decay: Option<f64>,
    /// AdamW's β₁, the first moment's decay (default 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adam_beta1: Option<f64>,
    /// AdamW's β₂, the second moment's decay (default 0.95).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adam_beta2: Option<f64>,
    /// AdamW's ε, added to the denominator (default 1e-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adam_epsilon: Option<f64>,
    /// SGD's momentum (default 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub momentum: Option<f64>,
    /// The gradient norm each step is clipped to (DeepSpeed's `gradient_clipping`; 0: no
    /// clipping; default 1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_grad_norm: Option<f64>,
}

/// The seed a spec gets when it names none.
pub const DEFAULT_SEED: u64 = 42;

/// `resources.time_limit` when the spec leaves it out: what the hold on the balance is for.
pub const DEFAULT_TIME_LIMIT: &str = "24h";
/// `resources.cards_per_node` and `resources.nodes` when the spec leaves them out.
pub const DEFAULT_CARDS_PER_NODE: u32 = 1;
pub const DEFAULT_NODES: u32 = 1;

fn default_seed() -> u64 {
    DEFAULT_SEED
}

fn is_default_seed(seed: &u64) -> bool {
    *seed == DEFAULT_SEED
}

impl Default for TrainSpec {
    fn default() -> Self {
        TrainSpec {
            epochs: None,
            steps: None,
            micro_batch: 1,
            grad_accum: 1,
            lr: 2e-5,
            warmup: 0,
            schedule: Schedule::Cosine,
            precision: Precision::Bf16,
            grad_checkpointing: Recompute::None,
            flash_attention: true,
            optimizer: Optimizer::Adamw,
            lora_rank: None,
            lora_alpha: None,
            lora_targets: None,
            seed: DEFAULT_SEED,
            weight_decay: None,
            adam_beta1: None,
            adam_beta2: None,
            adam_epsilon: None,
            momentum: None,
            max_grad_norm: None,
        }
    }
}

fn recompute_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "Activation recomputation: true (= \"full\": whole layers recomputed) or false (= \"none\").",
        "anyOf": [
            { "type": "boolean" },
            { "type": "string", "enum": ["none", "full"] }
        ]
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    Cosine,
    Linear,
    Constant,
}

impl Schedule {
    pub const ALL: [&'static str; 3] = ["cosine", "linear", "constant"];

    pub fn as_str(self) -> &'static str {
        match self {
            Schedule::Cosine => "cosine",
            Schedule::Linear => "linear",
            Schedule::Constant => "constant",
        }
    }

    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "cosine" => Schedule::Cosine,
            "linear" => Schedule::Linear,
            "constant" => Schedule::Constant,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Bf16,
    Fp16,
    Fp32,
}

impl Precision {
    pub const ALL: [&'static str; 3] = ["bf16", "fp16", "fp32"];

    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp32 => "fp32",
        }
    }

    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "bf16" => Precision::Bf16,
            "fp16" => Precision::Fp16,
            "fp32" => Precision::Fp32,
            _ => return None,
        })
    }

    /// Bytes per element of weights and activations in this precision.
    pub fn bytes(self) -> u64 {
        match self {
            Precision::Bf16 | Precision::Fp16 => 2,
            Precision::Fp32 => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    None,
    Selective,
    Full,
}

impl Recompute {
    pub fn as_str(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// AdamW: two fp32 moments per parameter.
    Adamw,
    /// SGD with momentum: one fp32 buffer per parameter.
    Sgd,
}

impl Optimizer {
    pub const ALL: [&'static str; 2] = ["adamw", "sgd"];

    pub fn as_str(self) -> &'static str {
        match self {
            Optimizer::Adamw => "adamw",
            Optimizer::Sgd => "sgd",
        }
    }

    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "adamw" => Optimizer::Adamw,
            "sgd" => Optimizer::Sgd,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParallelSpec {
    /// DeepSpeed ZeRO stage, 0 to 3.
    pub zero_stage: u8,
    /// Where the optimizer states live: `none` (GPU), `cpu` or `nvme` (ZeRO 1 and up).
    pub offload_optimizer: Offload,
    /// Where the parameters live between uses: `none` (GPU), `cpu` or `nvme` (ZeRO 3 only).
    pub offload_params: Offload,
    /// Tensor-parallel degree: DeepSpeed's AutoTP slices every layer over `tp` cards as the
    /// model's Hugging Face `tp_plan` says; full training (sft, pretrain) with ZeRO 0–2 only.
    pub tp: u32,
    /// Pipeline-parallel degree. onramp-train does not run pipeline parallelism, so only 1 is
    /// accepted; use ZeRO-3.
    pub pp: u32,
    /// Sequence-parallel degree (DeepSpeed-Ulysses, through Accelerate's ALST): splits each
    /// sequence across sp cards. It must divide seq_len and the attention heads, and divide or be
    /// divided by the key/value heads; it needs flash_attention = true.
    pub sp: u32,
}

impl Default for ParallelSpec {
    fn default() -> Self {
        ParallelSpec {
            zero_stage: 0,
            offload_optimizer: Offload::None,
            offload_params: Offload::None,
            tp: 1,
            pp: 1,
            sp: 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Offload {
    None,
    Cpu,
    Nvme,
}

impl Offload {
    pub const ALL: [&'static str; 3] = ["none", "cpu", "nvme"];

    pub fn as_str(self) -> &'static str {
        match self {
            Offload::None => "none",
            Offload::Cpu => "cpu",
            Offload::Nvme => "nvme",
        }
    }

    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "none" => Offload::None,
            "cpu" => Offload::Cpu,
            "nvme" => Offload::Nvme,
            _ => return None,
        })
    }

    pub fn is_on(self) -> bool {
        self != Offload::None
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesSpec {
    /// A card id from the catalogue (`a100-80g`, `rtx-4090`, `mxc500`, `cpu`, …).
    pub card: String,
    /// GPUs used on each node.
    pub cards_per_node: u32,
    /// Number of nodes.
    pub nodes: u32,
    /// Wall-clock limit such as `"24h"`, `"1h30m"`, `"2d"` or `"1-12:00:00"`; at most 365 days (7 on the runner).
    pub time_limit: String,
}

/// Checkpoints of `onramp-train`, in the job's work directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSpec {
    /// Save every this many optimizer steps.
    pub every_steps: u64,
    /// Also save when this many minutes passed since the last save (0: never by time).
    pub every_minutes: u64,
    /// How many of the latest checkpoints to keep.
    pub keep: u32,
    /// A job that starts again in the same work directory continues from its latest checkpoint.
    pub resume: bool,
    /// Continue from the latest checkpoint of an earlier job of the same account, named by its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_from: Option<String>,
    /// Push the latest checkpoint to the edge too: a job on any backend can continue from it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upload: bool,
}

impl Default for CheckpointSpec {
    fn default() -> Self {
        CheckpointSpec {
            every_steps: 500,
            every_minutes: 30,
            keep: 3,
            resume: true,
            resume_from: None,
            upload: false,
        }
    }
}

impl CheckpointSpec {
    pub fn is_default(&self) -> bool {
        *self == CheckpointSpec::default()
    }
}

/// What `onramp-train` writes at the end, and where it reports while it trains.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Also write the base model with the LoRA adapter folded in (`lora`, `qlora`).
    #[serde(default)]
    pub merge_adapter: bool,
    /// Experiment trackers the Trainer reports to, besides Onramp's own metrics. Unless the
    /// backend's environment says otherwise: TensorBoard's event files and an MLflow SQLite
    /// store in the job's `out/`; W&B online with `WANDB_API_KEY`, else an offline run there.
    #[serde(default)]
    pub report_to: Vec<ReportTo>,
}

impl OutputSpec {
    pub fn is_default(&self) -> bool {
        *self == OutputSpec::default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReportTo {
    Tensorboard,
    Wandb,
    Mlflow,
}

impl ReportTo {
    pub const ALL: [&'static str; 3] = ["tensorboard", "wandb", "mlflow"];

    pub fn as_str(self) -> &'static str {
        match self {
            ReportTo::Tensorboard => "tensorboard",
            ReportTo::Wandb => "wandb",
            ReportTo::Mlflow => "mlflow",
        }
    }

    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "tensorboard" => ReportTo::Tensorboard,
            "wandb" => ReportTo::Wandb,
            "mlflow" => ReportTo::Mlflow,
            _ => return None,
        })
    }
}

/// Knobs of the estimate itself.
#[derive(Clone, Debug, PartialEq, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EstimateSpec {
    /// Model FLOPs utilisation assumed for the time estimate (default 0.40 on GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mfu: Option<f64>,
    /// A wall time someone claims for this job, such as `"30h"`; checked against physics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_time: Option<String>,
}
