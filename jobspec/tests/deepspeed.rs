//! DeepSpeed ds_config import and checks, and export round trip.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use expect_test::{Expect, expect};
use jobspec::deepspeed::{ds_config, import_ds_config};

fn check(json: &str, dp: Option<u32>, expect: Expect) {
    let (import, diags) = import_ds_config(json, dp);
    let mut out = String::new();
    for d in &diags {
        out.push_str(&format!(
            "{} {} {}: {}\n",
            d.severity.as_str(),
            d.code.as_str(),
            d.path,
            d.message.en
        ));
        if let Some(h) = &d.help {
            out.push_str(&format!("  help: {}\n", h.en));
        }
    }
    match import {
        Some(i) => out.push_str(&format!(
            "batch {:?} micro {:?} accum {:?} zero {} offload {}/{} precision {:?}\n",
            i.train_batch_size,
            i.micro_batch,
            i.grad_accum,
            i.zero_stage,
            i.offload_optimizer.as_str(),
            i.offload_params.as_str(),
            i.precision.map(|p| p.as_str())
        )),
        None => out.push_str("rejected\n"),
    }
    expect.assert_eq(&out);
}

#[test]
fn two_values_give_the_third() {
    check(
        r#"{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true}}"#,
        Some(8),
        expect![[r#"
        batch Some(64) micro Some(2) accum Some(4) zero 0 offload none/none precision Some("bf16")
    "#]],
    );
    check(
        r#"{"train_batch_size": 64, "gradient_accumulation_steps": 2}"#,
        Some(8),
        expect![[r#"
        batch Some(64) micro Some(4) accum Some(2) zero 0 offload none/none precision Some("fp32")
    "#]],
    );
    check(
        r#"{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3}"#,
        Some(4),
        expect![[r#"
        batch Some(24) micro Some(2) accum Some(3) zero 0 offload none/none precision Some("fp32")
    "#]],
    );
}

#[test]
fn inconsistent_batch_is_an_error() {
    check(
        r#"{"train_batch_size": 60, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}"#,
        Some(8),
        expect![[r#"
        error batch-mismatch train_batch_size: train_batch_size 60 ≠ micro batch 2 × accumulation 4 × data-parallel size 8 = 64
        rejected
    "#]],
    );
    check(
        r#"{"train_batch_size": 60, "train_micro_batch_size_per_gpu": 16}"#,
        Some(8),
        expect![[r#"
        error batch-mismatch train_batch_size: train_batch_size 60 is not divisible by 128: no whole gradient_accumulation_steps fits
        rejected
    "#]],
    );
}

#[test]
fn auto_values_defer_to_the_spec() {
    check(
        r#"{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
            "offload_param": {"device": "cpu"}, "stage3_gather_16bit_weights_on_model_save": true}}"#,
        Some(8),
        expect![[r#"
            info defaulted train_batch_size: neither train_batch_size nor train_micro_batch_size_per_gpu is set ("auto"): the spec's batch settings apply
            batch None micro None accum None zero 3 offload cpu/cpu precision None
        "#]],
    );
}

#[test]
fn deepspeed_rules() {
    check(
        r#"{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}, "bf16": {"enabled": true},
            "zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}, "overlap_com": true},
            "optimiser": {}}"#,
        Some(1),
        expect![[r#"
            warning unknown-key optimiser: DeepSpeed does not know `optimiser`; it will be ignored
              help: did you mean `optimizer`?
            error conflict bf16: fp16 and bf16 cannot both be enabled
            warning unknown-key zero_optimization.overlap_com: DeepSpeed does not know `zero_optimization.overlap_com`; it will be ignored
              help: did you mean `overlap_comm`?
            error conflict zero_optimization.offload_param: offload_param needs ZeRO stage 3
            rejected
        "#]],
    );
    check(
        r#"{"zero_optimization": {"stage": 0, "offload_optimizer": {"device": "nvme"}}}"#,
        None,
        expect![[r#"
        error conflict zero_optimization.offload_optimizer: offload_optimizer needs ZeRO stage 1, 2 or 3
        rejected
    "#]],
    );
    check(
        "[1, 2]",
        None,
        expect![[r#"
        error wrong-type : a ds_config must be a JSON object
        rejected
    "#]],
    );
}

/// An exported config imports back with no complaint and the same settings.
#[test]
fn export_imports_cleanly() {
    for t in jobspec::templates() {
        let (Some(v), _) = jobspec::validate_toml(t.toml) else {
            panic!("{}", t.id)
        };
        if !v.card().is_gpu {
            continue;
        }
        let cfg = ds_config(&v).to_string();
        let (import, diags) = import_ds_config(&cfg, Some(v.dp()));
        assert!(diags.is_empty(), "{}: {diags:#?}", t.id);
        let import = import.unwrap();
        assert_eq!(import.train_batch_size, Some(v.global_batch()));
        assert_eq!(import.zero_stage, v.spec().parallel.zero_stage);
        // And its patch leaves the run as it was: the same ds_config and the same trainer run
        // (the patch writes out numbers the spec left to their defaults).
        let patched = jobspec::patch::apply_patch(v.spec(), &import.patch()).unwrap();
        let (Some(pv), _) = jobspec::validate::validate_spec(patched) else {
            panic!("{}", t.id)
        };
        assert_eq!(ds_config(&pv), ds_config(&v), "{}", t.id);
        assert_eq!(
            jobspec::trainer::trainer_run(&pv),
            jobspec::trainer::trainer_run(&v),
            "{}",
            t.id
        );
    }
}

/// A tensor-parallel spec's ds_config (DeepSpeed AutoTP's `tensor_parallel.autotp_size`)
/// imports back into the same spec and the same run.
#[test]
fn a_tensor_parallel_config_imports_its_tp() {
    let src = "name = \"t\"\ntask = \"sft\"\nmodel = \"llama-3-8b\"\n[data]\ndataset = \"d\"\n\
               tokens = 1000000\nseq_len = 1024\n[train]\nsteps = 10\n[parallel]\nzero_stage = 1\n\
               tp = 4\n[resources]\ncard = \"a100-80g\"\ncards_per_node = 8\ntime_limit = \"1h\"\n";
    let (v, d) = jobspec::validate_toml(src);
    let v = v.unwrap_or_else(|| panic!("{d:#?}"));
    let cfg = ds_config(&v).to_string();
    let (import, diags) = import_ds_config(&cfg, Some(v.dp()));
    assert!(diags.is_empty(), "{diags:#?}");
    let import = import.unwrap();
    assert_eq!(import.tp, Some(4));
    let mut spec = v.spec().clone();
    spec.parallel.tp = 1;
    let patched = jobspec::patch::apply_patch(&spec, &import.patch()).unwrap();
    assert_eq!(patched.parallel.tp, 4);
    let (pv, d) = jobspec::validate::validate_spec(patched);
    let pv = pv.unwrap_or_else(|| panic!("{d:#?}"));
    assert_eq!(
        jobspec::trainer::trainer_run(&pv),
        jobspec::trainer::trainer_run(&v)
    );
}

/// transformers' usual ZeRO-3 config (its "auto" values, DeepSpeed's own defaults written out),
/// with an AdamW of other betas and a warm-up schedule, carried into a spec.
const HF_ZERO3: &str = r#"{
  "bf16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": [0.9, 0.999], "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto", "warmup_num_steps": 30, "total_num_steps": "auto"}},
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {"device": "cpu", "pin_memory": true},
    "offload_param": {"device": "none"},
    "overlap_comm": true,
    "contiguous_gradients": true,
    "sub_group_size": 1e9,
    "reduce_bucket_size": "auto",
    "stage3_prefetch_bucket_size": "auto",
    "stage3_param_persistence_threshold": "auto",
    "stage3_max_live_parameters": 1e9,
    "stage3_max_reuse_distance": 1e9,
    "stage3_gather_16bit_weights_on_model_save": true
  },
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "steps_per_print": 2000,
  "train_batch_size": "auto",
  "train_micro_batch_size_per_gpu": "auto",
  "wall_clock_breakdwn": false
}"#;

/// The config's settings become the spec's, what it leaves to "auto" stays the spec's, and
/// what the job's own ds_config then does not run as written is listed, each at its line:
/// only real differences, not DeepSpeed's defaults written out.
#[test]
fn a_users_zero3_config_carries_into_the_spec() {
    let (v, _) = jobspec::validate_toml(include_str!("../specs/7b-lora-4090.toml"));
    let v = v.unwrap();
    let (import, diags) = import_ds_config(HF_ZERO3, Some(v.dp()));
    let import = import.unwrap();
    let notes: Vec<String> = diags
        .iter()
        .map(|d| format!("{}:{} {} {}", d.line, d.column, d.code.as_str(), d.path))
        .collect();
    assert_eq!(
        notes,
        [
            "24:3 unknown-key wall_clock_breakdwn",
            "22:3 defaulted train_batch_size"
        ],
        "{diags:#?}"
    );
    assert_eq!(
        diags[0].help.as_ref().unwrap().en,
        "did you mean `wall_clock_breakdown`?"
    );
    let patched = jobspec::patch::apply_patch(v.spec(), &import.patch()).unwrap();
    let t = &patched.train;
    assert_eq!(patched.parallel.zero_stage, 3);
    assert_eq!(patched.parallel.offload_optimizer.as_str(), "cpu");
    assert_eq!(patched.parallel.offload_params.as_str(), "none");
    assert_eq!((t.schedule.as_str(), t.warmup), ("linear", 30));
    // "auto" is the spec's.
    let s = v.spec();
    assert_eq!(
        (t.micro_batch, t.grad_accum, t.lr),
        (s.train.micro_batch, s.train.grad_accum, s.train.lr)
    );
    assert_eq!(t.precision, s.train.precision);
    let text = patched.to_toml();
    let (pv, pd) = jobspec::validate_toml(&text);
    let pv = pv.unwrap_or_else(|| panic!("{pd:?}"));
    let ours = ds_config(&pv);
    assert_eq!(ours["scheduler"]["type"], "WarmupDecayLR");
    assert_eq!(
        ours["zero_optimization"]["offload_optimizer"]["device"],
        "cpu"
    );
    let left: Vec<String> = jobspec::deepspeed::not_carried(HF_ZERO3, &ours)
        .iter()
        .map(|d| format!("{} {} {}", d.line, d.code.as_str(), d.message.en))
        .collect();
    expect![[r#"
        [
            "21 not-carried `steps_per_print` = 2000 is not carried: the job's ds_config has 10",
        ]
    "#]]
    .assert_debug_eq(&left);
}

/// Types the trainer does not run are named, and the spec keeps its own; DeepSpeed's Adam is
/// AdamW unless told otherwise; a warm-up that is not a count is refused.
#[test]
fn optimizers_and_schedules_the_trainer_does_not_run_are_named() {
    check(
        r#"{"optimizer": {"type": "Lamb", "params": {"lr": 1e-3}}, "scheduler": {"type": "OneCycle"}}"#,
        Some(1),
        expect![[r#"
            info defaulted train_batch_size: neither train_batch_size nor train_micro_batch_size_per_gpu is set ("auto"): the spec's batch settings apply
            warning not-carried optimizer.type: Onramp's trainer runs AdamW (or Adam with adam_w_mode on), SGD, not "Lamb": the spec's own setting stays
            warning not-carried scheduler.type: Onramp's trainer runs WarmupCosineLR, WarmupDecayLR, WarmupLR, not "OneCycle": the spec's own setting stays
            batch None micro None accum None zero 0 offload none/none precision Some("fp32")
        "#]],
    );
    let adam = |params: &str| {
        let cfg = format!(r#"{{"optimizer": {{"type": "Adam", "params": {params}}}}}"#);
        import_ds_config(&cfg, Some(1))
            .0
            .unwrap()
            .optimizer
            .map(|o| o.as_str())
    };
    assert_eq!(adam("{}"), Some("adamw"));
    assert_eq!(adam(r#"{"adam_w_mode": false}"#), None);
    check(
        r#"{"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": -3}}}"#,
        Some(1),
        expect![[r#"
            info defaulted train_batch_size: neither train_batch_size nor train_micro_batch_size_per_gpu is set ("auto"): the spec's batch settings apply
            error wrong-type scheduler.params.warmup_num_steps: `scheduler.params.warmup_num_steps` must be a whole number or "auto", not -3
            rejected
        "#]],
    );
}

/// The engine's config (the run's) leaves the optimizer and the schedule to the trainer, which
/// builds them from the run's plan as it does on the CPU; everything else is the ds_config's.
#[test]
fn the_engine_runs_the_trainers_optimizer_and_schedule() {
    let spec = |optimizer: &str, offload: &str| {
        format!(
            "name = \"e\"\ntask = \"sft\"\nmodel = \"llama-3-8b\"\n[data]\ndataset = \"alpaca\"\nseq_len = 2048\n\
             [train]\nsteps = 100\noptimizer = \"{optimizer}\"\n[parallel]\nzero_stage = 2\n\
             offload_optimizer = \"{offload}\"\n[resources]\ncard = \"a100-80g\"\ncards_per_node = 8\n"
        )
    };
    for (optimizer, offload, forced) in [
        ("adamw", "none", None),
        ("adamw", "cpu", None),
        ("sgd", "none", None),
        ("sgd", "cpu", Some(false)),
    ] {
        let (v, d) = jobspec::validate_toml(&spec(optimizer, offload));
        let v = v.unwrap_or_else(|| panic!("{d:#?}"));
        let full = ds_config(&v);
        let engine = jobspec::deepspeed::engine_config(&v);
        assert!(full.get("optimizer").is_some() && full.get("scheduler").is_some());
        assert!(engine.get("optimizer").is_none() && engine.get("scheduler").is_none());
        assert_eq!(
            engine
                .get("zero_force_ds_cpu_optimizer")
                .and_then(|f| f.as_bool()),
            forced,
            "{optimizer} {offload}"
        );
        for (k, value) in full.as_object().unwrap() {
            if k != "optimizer" && k != "scheduler" {
                assert_eq!(&engine[k], value, "{k}");
            }
        }
        let run = serde_json::to_value(jobspec::trainer::trainer_run(&v)).unwrap();
        assert_eq!(run["ds_config"], engine);
    }
}
