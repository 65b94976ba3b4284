//! The trainer's run: everything `onramp-train` (the Python trainer in `trainer/`) needs to train
//! what a spec describes, derived here once. The batch identity, the number of steps, the
//! optimizer's numbers, precision, ZeRO and the ds_config, LoRA, checkpoints, the logging cadence
//! and the plan's memory advice for an out-of-memory end.
//!
//! Every launch writes it next to the job as [`RUN_FILE`] (the sbatch script, the runner, and
//! `onramp plan --trainer-run SPEC` for a run by hand), and the trainer reads only that file, with
//! a strict loader that refuses another [`RUN_VERSION`] or shape ([`run_schema`], shipped in the
//! trainer's package). The trainer derives nothing and keeps no defaults of its own.

use crate::catalog::{self, Arch};
use crate::spec::{ModelRef, Optimizer, Recompute, Schedule};
use crate::validate::ValidSpec;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

/// The file next to every trainer job that the trainer reads: a [`TrainerRun`] as JSON.
pub const RUN_FILE: &str = "onramp-run.json";

/// The shape of [`TrainerRun`]: a trainer refuses a run of another version.
pub const RUN_VERSION: u32 = 2;

/// One whole run as the trainer takes it.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TrainerRun {
    /// [`RUN_VERSION`].
    #[schemars(schema_with = "version_schema")]
    pub version: u32,
    pub plan: TrainerPlan,
    /// The ds_config DeepSpeed runs ([`crate::deepspeed::engine_config`]: the optimizer and
    /// the schedule are the trainer's, from this plan); `null` on the CPU card, which runs
    /// without DeepSpeed.
    pub ds_config: Option<Value>,
    /// The plan's memory estimate and the changes that lower it, said when CUDA runs out of
    /// memory; `null` on the CPU card.
    pub oom_advice: Option<RunAdvice>,
}

fn version_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "const": RUN_VERSION})
}

/// What [`crate::estimate::oom_advice`] says, in English (the job's log is English).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunAdvice {
    pub card: String,
    pub card_bytes: u64,
    pub per_gpu_bytes: u64,
    /// Whether the plan expected the run to fit.
    pub fits: bool,
    pub fixes: Vec<RunFix>,
}

#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunFix {
    pub title: String,
    pub patch: Vec<RunPatch>,
    pub per_gpu_bytes: u64,
}

/// One change of a fix: a spec path (`train.micro_batch`) and its new value.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunPatch {
    pub path: String,
    pub value: Value,
}

/// The optimizer as the trainer builds it without DeepSpeed (with DeepSpeed, the ds_config's,
/// which holds the same numbers).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TrainerOptim {
    /// `adamw` or `sgd`.
    pub name: &'static str,
    pub lr: f64,
    pub betas: [f64; 2],
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    /// The gradient norm clipped to.
    pub grad_clip: f64,
}

/// The model a plan trains: a catalogue entry, or a custom architecture (`id` is `None`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TrainerModel {
    pub id: Option<String>,
    pub hf_repo: Option<String>,
    pub name: String,
    pub arch: Arch,
    pub max_seq_len: Option<u32>,
    /// Its repo's own code must run to load it (`trust_remote_code`), which the trainer does
    /// only where the backend's operator allows the model (`ONRAMP_TRUST_REMOTE_CODE`).
    pub remote_code: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TrainerLora {
    pub r: u32,
    pub alpha: u32,
    /// Module names, or `["all-linear"]`.
    pub targets: Vec<String>,
    /// jobspec has no dropout key: none keeps a resumed run identical to an uninterrupted one.
    pub dropout: f64,
}

/// How the run is evaluated (`[eval]`, with its defaults filled in).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TrainerEval {
    /// The share of the training data held out; `null` when `dataset` is set.
    pub holdout: Option<f64>,
    /// A dataset of its own to evaluate on.
    pub dataset: Option<String>,
    /// The most examples evaluated.
    pub max_examples: u32,
    /// Evaluate every this many steps (`eval.every_steps`, else five times a run), and before and
    /// after training.
    pub every_steps: u64,
    /// Prompts answered before and after training; empty: the first [`DEFAULT_PROMPTS`] prompts
    /// of the eval set.
    pub prompts: Vec<String>,
    pub default_prompts: u32,
    /// The longest answer, in tokens; answers are greedy (no sampling), so they repeat.
    pub max_new_tokens: u32,
    /// lm-evaluation-harness tasks scored on the base and the trained model after training.
    pub tasks: Vec<String>,
    /// Few-shot examples before each question of `tasks`.
    pub fewshot: u32,
    /// The most examples of each task scored; `null`: all of them.
    pub task_max_examples: Option<u32>,
}

/// How many prompts of the eval set the models answer when `eval.prompts` lists none.
pub const DEFAULT_PROMPTS: u32 = 3;

/// What the trainer trains: every value of the spec it uses, with jobspec's defaults filled in,
/// and those derived from them.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TrainerPlan {
    pub name: String,
    pub task: &'static str,
    pub model: TrainerModel,
    pub dataset: String,
    pub seq_len: u32,
    pub data_tokens: Option<u64>,
    /// `data.examples`: the padded examples one epoch has, as the plan counted them.
    pub data_examples: Option<u64>,
    pub card: String,
    pub is_gpu: bool,
    pub world_size: u32,
    pub dp: u32,
    pub micro_batch: u32,
    pub grad_accum: u32,
    pub global_batch: u64,
    /// Optimizer steps: `train.steps`, or epochs × `data.tokens` over tokens per step.
    pub max_steps: u64,
    pub lr: f64,
    pub optim: TrainerOptim,
    pub warmup_steps: u64,
    pub schedule: &'static str,
    /// The Hugging Face Trainer's `lr_scheduler_type` for `schedule` (without DeepSpeed).
    pub hf_schedule: &'static str,
    pub precision: &'static str,
    pub grad_checkpointing: bool,
    /// `train.flash_attention`: attention that never stores the s×s scores (FlashAttention 2
    /// where the machine has it, else PyTorch's fused SDPA kernels), as the memory estimate
    /// assumes; `false`: eager attention, scores stored.
    pub flash_attention: bool,
    pub zero_stage: u8,
    pub offload_optimizer: &'static str,
    pub offload_params: &'static str,
    pub sp: u32,
    pub lora: Option<TrainerLora>,
    pub seed: u64,
    pub save_every_steps: u64,
    pub save_every_minutes: u64,
    pub keep_checkpoints: u32,
    pub resume: bool,
    /// `checkpoint.resume_from`: the earlier job whose latest checkpoint this one starts from,
    /// fetched from the edge when its job script or runner found none of it on this machine.
    pub resume_from: Option<String>,
    /// `checkpoint.upload`: the latest checkpoint is pushed with the trained model.
    pub upload_checkpoint: bool,
    /// A training loss line every this many steps (a hundred lines a run).
    pub logging_steps: u64,
    pub eval: TrainerEval,
    pub merge_adapter: bool,
    pub report_to: Vec<&'static str>,
}

/// The Hugging Face Trainer's scheduler name for a spec's schedule.
pub fn hf_schedule(s: Schedule) -> &'static str {
    match s {
        Schedule::Cosine => "cosine",
        Schedule::Linear => "linear",
        Schedule::Constant => "constant_with_warmup",
    }
}

pub fn trainer_plan(v: &ValidSpec) -> TrainerPlan {
    let s = v.spec();
    let t = &s.train;
    let p = &s.parallel;
    let model = match &s.model {
        ModelRef::Id(id) => {
            let m = catalog::model(id);
            TrainerModel {
                id: Some(m.map_or_else(|| id.clone(), |m| m.id.to_string())),
                hf_repo: m.map(|m| m.hf_repo.to_string()),
                name: v.model_name().to_string(),
                arch: *v.arch(),
                max_seq_len: m.map(|m| m.max_seq_len),
                remote_code: m.is_some_and(|m| m.remote_code),
            }
        }
        ModelRef::Custom(_) => TrainerModel {
            id: None,
            hf_repo: None,
            name: v.model_name().to_string(),
            arch: *v.arch(),
            max_seq_len: None,
            remote_code: false,
        },
    };
    TrainerPlan {
        name: s.name.clone(),
        task: s.task.as_str(),
        model,
        dataset: s.data.dataset.clone(),
        seq_len: s.data.seq_len,
        data_tokens: s.data.tokens,
        data_examples: s.data.examples,
        card: s.resources.card.clone(),
        is_gpu: v.card().is_gpu,
        world_size: v.world_size(),
        dp: v.dp(),
        micro_batch: t.micro_batch,
        grad_accum: t.grad_accum,
        global_batch: v.global_batch(),
        max_steps: v.steps(),
        lr: t.lr,
        optim: optim(v),
        warmup_steps: t.warmup,
        schedule: t.schedule.as_str(),
        hf_schedule: hf_schedule(t.schedule),
        precision: t.precision.as_str(),
        grad_checkpointing: t.grad_checkpointing != Recompute::None,
        flash_attention: t.flash_attention,
        zero_stage: p.zero_stage,
        offload_optimizer: p.offload_optimizer.as_str(),
        offload_params: p.offload_params.as_str(),
        sp: p.sp,
        lora: s.task.is_adapter().then(|| TrainerLora {
            r: v.lora_rank(),
            alpha: v.lora_alpha(),
            targets: v.lora_targets().to_vec(),
            dropout: 0.0,
        }),
        seed: t.seed,
        save_every_steps: s.checkpoint.every_steps,
        save_every_minutes: s.checkpoint.every_minutes,
        keep_checkpoints: s.checkpoint.keep,
        resume: s.checkpoint.resume,
        resume_from: s.checkpoint.resume_from.clone(),
        upload_checkpoint: s.checkpoint.upload,
        logging_steps: (v.steps() / 100).max(1),
        eval: trainer_eval(v),
        merge_adapter: s.output.merge_adapter,
        report_to: s.output.report_to.iter().map(|r| r.as_str()).collect(),
    }
}

fn trainer_eval(v: &ValidSpec) -> TrainerEval {
    let e = &v.spec().eval;
    TrainerEval {
        holdout: e.dataset.is_none().then_some(e.holdout),
        dataset: e.dataset.clone(),
        max_examples: e.max_examples,
        every_steps: e.every_steps.unwrap_or((v.steps() / 5).max(1)),
        prompts: e.prompts.clone(),
        default_prompts: DEFAULT_PROMPTS,
        max_new_tokens: e.max_new_tokens(v.spec().data.seq_len),
        tasks: e.tasks.clone(),
        fewshot: e.fewshot,
        task_max_examples: e.task_max_examples,
    }
}

fn optim(v: &ValidSpec) -> TrainerOptim {
    use crate::deepspeed as ds;
    let t = &v.spec().train;
    let adamw = t.optimizer == Optimizer::Adamw;
    let o = ds::optim_numbers(t);
    TrainerOptim {
        name: t.optimizer.as_str(),
        lr: t.lr,
        betas: o.betas,
        eps: o.eps,
        weight_decay: o.weight_decay,
        momentum: if adamw { 0.0 } else { o.momentum },
        grad_clip: o.max_grad_norm,
    }
}

/// The whole run of a valid spec (of any task but tiny-train, which the runner trains itself).
pub fn trainer_run(v: &ValidSpec) -> TrainerRun {
    let gpu = v.card().is_gpu;
    TrainerRun {
        version: RUN_VERSION,
        plan: trainer_plan(v),
        ds_config: gpu.then(|| crate::deepspeed::engine_config(v)),
        oom_advice: gpu.then(|| advice(v)),
    }
}

/// [`RUN_FILE`]'s text for `v`: the run as pretty JSON, with a final newline.
pub fn run_json(v: &ValidSpec) -> String {
    serde_json::to_string_pretty(&trainer_run(v)).unwrap_or_default() + "\n"
}

/// The JSON Schema of [`TrainerRun`] (the trainer ships it; jobspec's tests check every run
/// against it). Every key of every object is required, `null` where it may be absent: a run
/// leans on no reader's defaults.
pub fn run_schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(TrainerRun)).unwrap_or_default();
    require_all(&mut schema);
    if let Some(defs) = schema.get_mut("$defs").and_then(Value::as_object_mut) {
        defs.values_mut().for_each(require_all);
    }
    schema
}

fn require_all(schema: &mut Value) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let keys: Vec<Value> = props.keys().map(|k| json!(k)).collect();
        schema["required"] = Value::Array(keys);
    }
}

fn advice(v: &ValidSpec) -> RunAdvice {
    let a = crate::estimate::oom_advice(v);
    RunAdvice {
        card: a.card,
        card_bytes: a.card_bytes,
        per_gpu_bytes: a.per_gpu_bytes,
        fits: a.fits,
        fixes: a
            .fixes
            .into_iter()
            .map(|f| RunFix {
                title: f.title.en,
                patch: f
                    .patch
                    .into_iter()
                    .map(|p| RunPatch {
                        path: p.path,
                        value: p.value,
                    })
                    .collect(),
                per_gpu_bytes: f.per_gpu_bytes,
            })
            .collect(),
    }
}

/// The spec as a job's folder keeps it (`spec.toml`, for the record: the trainer reads
/// [`RUN_FILE`]): the validated spec with every default filled in.
pub fn spec_toml(v: &ValidSpec) -> String {
    v.spec().to_toml()
}

/// The model catalogue as the trainer ships it, with jobspec's parameter count of each model
/// (the trainer's tests build every model from these numbers and count again).
pub fn catalog_export() -> Value {
    let models: Vec<Value> = catalog::MODELS
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "display": m.display,
                "hf_repo": m.hf_repo,
                "chat_template": m.chat_template,
                "family": m.family,
                "lora_modules": m.family.modules(),
                "remote_code": m.remote_code,
                "max_seq_len": m.max_seq_len,
                "arch": m.arch,
                "params": crate::estimate::params::count(&m.arch).total,
            })
        })
        .collect();
    json!({
        "note": "Generated by jobspec's tests (jobspec/tests/trainer_export.rs) from jobspec/src/catalog; do not edit.",
        "models": models,
    })
}
