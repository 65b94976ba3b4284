//! What `onramp-train` (the Python trainer in `trainer/`) must derive from a spec, as jobspec
//! derives it: the batch identity, the number of steps, precision, ZeRO, LoRA, checkpoints.
//!
//! The trainer reads the same TOML and derives these values itself; jobspec's tests export
//! [`trainer_plan`] for the templates and a range of generated specs (with [`catalog_export`],
//! the model catalogue the trainer ships) into `trainer/`, and the trainer's tests compare its
//! own derivation with them. A disagreement is a test failure, not a surprise in a job.

use crate::catalog::{self, Arch};
use crate::spec::{ModelRef, Recompute, Schedule};
use crate::validate::ValidSpec;
use serde::Serialize;
use serde_json::{Value, json};

/// The model a plan trains: a catalogue entry, or a custom architecture (`id` is `None`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainerModel {
    pub id: Option<String>,
    pub hf_repo: Option<String>,
    pub name: String,
    pub arch: Arch,
    pub max_seq_len: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainerLora {
    pub r: u32,
    pub alpha: u32,
    pub targets: Vec<String>,
}

/// Everything the trainer derives from a valid spec.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainerPlan {
    pub name: String,
    pub task: &'static str,
    pub model: TrainerModel,
    pub dataset: String,
    pub seq_len: u32,
    pub data_tokens: Option<u64>,
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
    pub warmup_steps: u64,
    pub schedule: &'static str,
    /// The Hugging Face Trainer's `lr_scheduler_type` for `schedule` (without DeepSpeed).
    pub hf_schedule: &'static str,
    pub precision: &'static str,
    pub grad_checkpointing: bool,
    pub optimizer: &'static str,
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
            }
        }
        ModelRef::Custom(_) => TrainerModel {
            id: None,
            hf_repo: None,
            name: v.model_name().to_string(),
            arch: *v.arch(),
            max_seq_len: None,
        },
    };
    TrainerPlan {
        name: s.name.clone(),
        task: s.task.as_str(),
        model,
        dataset: s.data.dataset.clone(),
        seq_len: s.data.seq_len,
        data_tokens: s.data.tokens,
        card: s.resources.card.clone(),
        is_gpu: v.card().is_gpu,
        world_size: v.world_size(),
        dp: v.dp(),
        micro_batch: t.micro_batch,
        grad_accum: t.grad_accum,
        global_batch: v.global_batch(),
        max_steps: v.steps(),
        lr: t.lr,
        warmup_steps: t.warmup,
        schedule: t.schedule.as_str(),
        hf_schedule: hf_schedule(t.schedule),
        precision: t.precision.as_str(),
        grad_checkpointing: t.grad_checkpointing != Recompute::None,
        optimizer: t.optimizer.as_str(),
        zero_stage: p.zero_stage,
        offload_optimizer: p.offload_optimizer.as_str(),
        offload_params: p.offload_params.as_str(),
        sp: p.sp,
        lora: s.task.is_adapter().then(|| TrainerLora {
            r: v.lora_rank(),
            alpha: v.lora_alpha(),
            targets: v.lora_targets().to_vec(),
        }),
        seed: t.seed,
        save_every_steps: s.checkpoint.every_steps,
        save_every_minutes: s.checkpoint.every_minutes,
        keep_checkpoints: s.checkpoint.keep,
        resume: s.checkpoint.resume,
        merge_adapter: s.output.merge_adapter,
        report_to: s.output.report_to.iter().map(|r| r.as_str()).collect(),
    }
}

/// The spec as the trainer reads it (`spec.toml` next to the job): the validated spec with every
/// default filled in.
pub fn spec_toml(v: &ValidSpec) -> String {
    v.spec().to_toml()
}

/// The ds_config the trainer is given: jobspec's, or `{}` on the CPU card (no DeepSpeed).
pub fn trainer_ds_config(v: &ValidSpec) -> Value {
    if v.card().is_gpu {
        crate::deepspeed::ds_config(v)
    } else {
        json!({})
    }
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
