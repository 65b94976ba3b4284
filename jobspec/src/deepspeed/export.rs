//! The ds_config jobspec writes for a spec: batch identity, precision, ZeRO and offload, the
//! optimizer and its schedule, with the numbers the trainer's run shares.

use crate::spec::{Offload, Optimizer, Precision, Schedule, TrainSpec};
use crate::validate::ValidSpec;
use serde_json::{Map, Value, json};

/// The ds_config for a valid spec.
pub fn ds_config(v: &ValidSpec) -> Value {
    let t = &v.spec().train;
    let mut cfg = Map::new();
    cfg.insert("train_batch_size".into(), json!(v.global_batch()));
    cfg.insert(
        "train_micro_batch_size_per_gpu".into(),
        json!(t.micro_batch),
    );
    cfg.insert("gradient_accumulation_steps".into(), json!(t.grad_accum));
    cfg.insert(
        "gradient_clipping".into(),
        json!(optim_numbers(t).max_grad_norm),
    );
    match t.precision {
        Precision::Bf16 => {
            cfg.insert("bf16".into(), json!({ "enabled": true }));
        }
        Precision::Fp16 => {
            cfg.insert(
                "fp16".into(),
                json!({ "enabled": true, "loss_scale": 0, "initial_scale_power": 16,
                        "loss_scale_window": 1000, "hysteresis": 2, "min_loss_scale": 1 }),
            );
        }
        Precision::Fp32 => {}
    }
    cfg.insert("zero_optimization".into(), zero_optimization(v));
    cfg.insert("optimizer".into(), optimizer(v));
    cfg.insert("scheduler".into(), scheduler(v));
    if v.spec().parallel.sp > 1 {
        cfg.insert("sequence_parallel_size".into(), json!(v.spec().parallel.sp));
    }
    if v.spec().parallel.tp > 1 {
        // DeepSpeed's AutoTP, which splits each layer as the model's Hugging Face `tp_plan`
        // says (column-wise q/k/v and gate/up, row-wise o and down).
        cfg.insert(
            "tensor_parallel".into(),
            json!({ "autotp_size": v.spec().parallel.tp }),
        );
    }
    cfg.insert("steps_per_print".into(), json!(10));
    cfg.insert("wall_clock_breakdown".into(), json!(false));
    Value::Object(cfg)
}

/// The ds_config a job's DeepSpeed engine runs (the run's `ds_config`): [`ds_config`] without
/// its `optimizer` and `scheduler`. onramp-train then builds both as the Hugging Face Trainer
/// does on the CPU, from the run's `plan.optim` and `plan.hf_schedule` (the same numbers), and
/// hands them to DeepSpeed: weight decay spares biases and norms, and the learning rate follows
/// the same curve step for step. DeepSpeed's own would decay every parameter (the Trainer gives
/// it one flat group), warm up on a log curve and start its cosine a step early. An SGD whose
/// states are offloaded is not DeepSpeed's CPU optimizer, which DeepSpeed must be told it may
/// run (`zero_force_ds_cpu_optimizer`). [`ds_config`] keeps both sections for running the
/// config outside onramp-train, where DeepSpeed must make them itself.
pub fn engine_config(v: &ValidSpec) -> Value {
    let mut cfg = ds_config(v);
    if let Value::Object(m) = &mut cfg {
        m.remove("optimizer");
        m.remove("scheduler");
        let p = &v.spec().parallel;
        if v.spec().train.optimizer == Optimizer::Sgd && p.offload_optimizer != Offload::None {
            m.insert("zero_force_ds_cpu_optimizer".into(), json!(false));
        }
    }
    cfg
}

/// The ZeRO stage with its buckets, and where optimizer states and parameters are offloaded;
/// the spec's `[deepspeed]` keys over jobspec's own.
fn zero_optimization(v: &ValidSpec) -> Value {
    let p = &v.spec().parallel;
    let mut zero = Map::new();
    zero.insert("stage".into(), json!(p.zero_stage));
    if p.zero_stage > 0 {
        zero.insert("overlap_comm".into(), json!(true));
        zero.insert("contiguous_gradients".into(), json!(true));
        zero.insert("reduce_bucket_size".into(), json!(500_000_000u64));
    }
    let offload = |o: Offload| match o {
        Offload::None => None,
        Offload::Cpu => Some(json!({ "device": "cpu", "pin_memory": true })),
        // The path stands for the node's NVMe folder: a job swaps in a folder of its own under
        // its backend's `nvme_path`, which onramp-train puts here (ONRAMP_NVME_PATH).
        Offload::Nvme => {
            Some(json!({ "device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true }))
        }
    };
    if let Some(o) = offload(p.offload_optimizer) {
        zero.insert("offload_optimizer".into(), o);
    }
    if let Some(o) = offload(p.offload_params) {
        zero.insert("offload_param".into(), o);
    }
    if p.zero_stage == 3 || p.tp > 1 {
        // Saved whole: a checkpoint's and the trained model's weights are gathered from the
        // ranks that hold their parts (ZeRO-3's partitions, AutoTP's slices).
        zero.insert(
            "stage3_gather_16bit_weights_on_model_save".into(),
            json!(true),
        );
    }
    if p.zero_stage == 3 {
        zero.insert("stage3_prefetch_bucket_size".into(), json!(50_000_000u64));
        zero.insert(
            "stage3_param_persistence_threshold".into(),
            json!(100_000u64),
        );
    }
    if p.zero_stage > 0 {
        for (k, value) in v.spec().deepspeed.entries() {
            zero.insert(k.into(), value);
        }
    }
    Value::Object(zero)
}

/// AdamW's betas, epsilon and weight decay: the ds_config's and the trainer's run's
/// (`crate::trainer::TrainerOptim`), one set of numbers.
pub const ADAMW_BETAS: [f64; 2] = [0.9, 0.95];
pub const ADAMW_EPS: f64 = 1e-8;
pub const ADAMW_WEIGHT_DECAY: f64 = 0.1;
/// SGD's momentum.
pub const SGD_MOMENTUM: f64 = 0.9;
/// The gradient norm every run clips to.
pub const GRAD_CLIP: f64 = 1.0;

/// The optimizer's numbers a spec runs with: its own, else the defaults above. The ds_config
/// and the trainer's run without DeepSpeed both take them from here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptimNumbers {
    pub betas: [f64; 2],
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub max_grad_norm: f64,
}

pub fn optim_numbers(t: &TrainSpec) -> OptimNumbers {
    let default_decay = match t.optimizer {
        Optimizer::Adamw => ADAMW_WEIGHT_DECAY,
        Optimizer::Sgd => 0.0,
    };
    OptimNumbers {
        betas: [
            t.adam_beta1.unwrap_or(ADAMW_BETAS[0]),
            t.adam_beta2.unwrap_or(ADAMW_BETAS[1]),
        ],
        eps: t.adam_epsilon.unwrap_or(ADAMW_EPS),
        weight_decay: t.weight_decay.unwrap_or(default_decay),
        momentum: t.momentum.unwrap_or(SGD_MOMENTUM),
        max_grad_norm: t.max_grad_norm.unwrap_or(GRAD_CLIP),
    }
}

fn optimizer(v: &ValidSpec) -> Value {
    let t = &v.spec().train;
    let o = optim_numbers(t);
    match t.optimizer {
        Optimizer::Adamw => json!({
            "type": "AdamW",
            "params": { "lr": t.lr, "betas": o.betas, "eps": o.eps,
                        "weight_decay": o.weight_decay }
        }),
        Optimizer::Sgd if o.weight_decay > 0.0 => json!({
            "type": "SGD",
            "params": { "lr": t.lr, "momentum": o.momentum, "weight_decay": o.weight_decay }
        }),
        Optimizer::Sgd => {
            json!({ "type": "SGD", "params": { "lr": t.lr, "momentum": o.momentum } })
        }
    }
}

fn scheduler(v: &ValidSpec) -> Value {
    let t = &v.spec().train;
    // DeepSpeed 0.19.6 and newer reject `warmup_num_steps = 0` (older ones clamped it to 2), and
    // the Hugging Face Trainer fills in at least 1: no warm-up is one step of it.
    let warmup = t.warmup.max(1);
    match t.schedule {
        Schedule::Cosine => json!({
            "type": "WarmupCosineLR",
            "params": { "total_num_steps": v.steps(), "warmup_num_steps": warmup }
        }),
        Schedule::Linear => json!({
            "type": "WarmupDecayLR",
            "params": { "total_num_steps": v.steps(), "warmup_num_steps": warmup,
                        "warmup_max_lr": t.lr, "warmup_min_lr": 0.0 }
        }),
        Schedule::Constant => json!({
            "type": "WarmupLR",
            "params": { "warmup_num_steps": warmup, "warmup_max_lr": t.lr, "warmup_min_lr": 0.0 }
        }),
    }
}
