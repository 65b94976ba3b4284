//! The optimizer's numbers and ZeRO's tuning: a user's ds_config carries them into the spec,
//! the spec's ds_config and the trainer's run hold them, and what would be ignored is said.

#![allow(clippy::unwrap_used)]

use jobspec::deepspeed::{ds_config, import_ds_config, not_carried};
use jobspec::diag::Severity;

const BASE: &str = include_str!("../specs/7b-lora-4090.toml");

/// A ZeRO-2 config of the kind people bring: AdamW with its own betas, epsilon and weight
/// decay, clipping at 0.5, bucket sizes written as floats, and one size left to "auto".
const TUNED: &str = r#"{
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": 0.5,
  "bf16": {"enabled": true},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": [0.85, 0.98], "eps": 1e-6, "weight_decay": 0.01}},
  "zero_optimization": {
    "stage": 2,
    "overlap_comm": false,
    "reduce_scatter": true,
    "reduce_bucket_size": 2e8,
    "allgather_bucket_size": 300000000,
    "allgather_partitions": "auto",
    "round_robin_gradients": true
  }
}"#;

#[test]
fn a_tuned_config_runs_as_written() {
    let (v, _) = jobspec::validate_toml(BASE);
    let v = v.unwrap();
    let (import, diags) = import_ds_config(TUNED, Some(v.dp()));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:#?}");
    let patched = jobspec::patch::apply_patch(v.spec(), &import.unwrap().patch()).unwrap();
    // Through the spec's text, as `onramp plan --deepspeed` writes it.
    let (pv, pd) = jobspec::validate_toml(&patched.to_toml());
    let pv = pv.unwrap_or_else(|| panic!("{pd:#?}"));
    let t = &pv.spec().train;
    assert_eq!(
        (t.adam_beta1, t.adam_beta2, t.adam_epsilon, t.weight_decay),
        (Some(0.85), Some(0.98), Some(1e-6), Some(0.01))
    );
    assert_eq!(t.max_grad_norm, Some(0.5));
    let ours = ds_config(&pv);
    assert_eq!(ours["gradient_clipping"], 0.5);
    assert_eq!(
        ours["optimizer"]["params"]["betas"],
        serde_json::json!([0.85, 0.98])
    );
    assert_eq!(ours["optimizer"]["params"]["eps"], 1e-6);
    assert_eq!(ours["optimizer"]["params"]["weight_decay"], 0.01);
    let z = &ours["zero_optimization"];
    assert_eq!(z["overlap_comm"], false);
    assert_eq!(z["reduce_bucket_size"], 200_000_000u64);
    assert_eq!(z["allgather_bucket_size"], 300_000_000u64);
    assert_eq!(z["round_robin_gradients"], true);
    // Nothing of the config is left behind, and nothing is said to be ignored.
    assert_eq!(not_carried(TUNED, &ours), Vec::new());
    assert!(
        !pd.iter().any(|d| d.severity == Severity::Warning),
        "{pd:#?}"
    );
    // Without DeepSpeed the trainer builds its optimizer from the same numbers.
    let run = serde_json::to_value(jobspec::trainer::trainer_run(&pv)).unwrap();
    let o = &run["plan"]["optim"];
    assert_eq!(o["betas"], serde_json::json!([0.85, 0.98]));
    assert_eq!(
        (o["eps"].as_f64(), o["weight_decay"].as_f64()),
        (Some(1e-6), Some(0.01))
    );
    assert_eq!(o["grad_clip"], 0.5);
}

#[test]
fn sgd_carries_momentum_and_weight_decay() {
    let (v, _) = jobspec::validate_toml(BASE);
    let v = v.unwrap();
    let cfg = r#"{"optimizer": {"type": "SGD", "params": {"lr": 0.01, "momentum": 0.8, "weight_decay": 0.001}}}"#;
    let (import, diags) = import_ds_config(cfg, Some(v.dp()));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:#?}");
    let patched = jobspec::patch::apply_patch(v.spec(), &import.unwrap().patch()).unwrap();
    let (pv, _) = jobspec::validate_spec(patched);
    let ours = ds_config(&pv.unwrap());
    assert_eq!(
        ours["optimizer"],
        serde_json::json!({"type": "SGD", "params": {"lr": 0.01, "momentum": 0.8, "weight_decay": 0.001}})
    );
    assert_eq!(not_carried(cfg, &ours), Vec::new());
}

/// Each bad value is an error at its path, and the import gives no spec.
#[test]
fn bad_numbers_are_refused_where_they_are() {
    let cfg = r#"{
  "gradient_clipping": -1,
  "optimizer": {"type": "AdamW", "params": {"betas": [0.9, 1.5], "eps": 0, "weight_decay": "lots"}},
  "zero_optimization": {"stage": 3, "reduce_bucket_size": 0, "sub_group_size": 1.5, "overlap_comm": "yes"}
}"#;
    let (import, diags) = import_ds_config(cfg, Some(1));
    assert!(import.is_none());
    let errors: Vec<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}:{} {}", d.line, d.code.as_str(), d.path))
        .collect();
    assert_eq!(
        errors,
        [
            "3:wrong-type optimizer.params.weight_decay",
            "3:out-of-range optimizer.params.eps",
            "2:out-of-range gradient_clipping",
            "3:out-of-range optimizer.params.betas",
            "4:out-of-range zero_optimization.reduce_bucket_size",
            "4:wrong-type zero_optimization.overlap_comm",
            "4:out-of-range zero_optimization.sub_group_size",
        ],
        "{diags:#?}"
    );
}

fn warnings(extra: &str) -> Vec<String> {
    let text = format!("{BASE}\n{extra}");
    let (v, diags) = jobspec::validate_toml(&text);
    assert!(v.is_some(), "{diags:#?}");
    diags
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| format!("{} {}", d.path, d.message.en))
        .collect()
}

/// A key the run would not read is a warning at that key; one it reads is not.
#[test]
fn what_would_be_ignored_is_said() {
    let w =
        warnings("[deepspeed]\nstage3_prefetch_bucket_size = 1000\nreduce_bucket_size = 1000\n");
    assert_eq!(
        w,
        [
            "deepspeed.stage3_prefetch_bucket_size `deepspeed.stage3_prefetch_bucket_size` is ignored at ZeRO stage 0",
            "deepspeed.reduce_bucket_size `deepspeed.reduce_bucket_size` is ignored at ZeRO stage 0"
        ]
    );
    let w = warnings(
        "[parallel]\nzero_stage = 3\n[deepspeed]\nstage3_prefetch_bucket_size = 1000\nallgather_bucket_size = 1000\n",
    );
    assert_eq!(
        w,
        [
            "deepspeed.allgather_bucket_size `deepspeed.allgather_bucket_size` is ignored at ZeRO stage 3"
        ]
    );
    let w = warnings(
        "[parallel]\nzero_stage = 3\n[deepspeed]\nstage3_max_live_parameters = 3000000000\nstage3_prefetch_bucket_size = 1000\n",
    );
    assert_eq!(
        w,
        [
            "deepspeed.stage3_max_live_parameters `deepspeed.stage3_max_live_parameters` = 3000000000 is above DeepSpeed's default 1000000000: each GPU may hold up to 3.7 GiB more parameters than the plan's memory figure, which assumes the default"
        ]
    );
    let sgd = BASE.replace(
        "precision = \"bf16\"",
        "precision = \"bf16\"\noptimizer = \"sgd\"\nadam_beta2 = 0.99\nmomentum = 0.5",
    );
    let (_, diags) = jobspec::validate_toml(&sgd);
    let w: Vec<&str> = diags
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(w, ["train.adam_beta2"]);
}

#[test]
fn out_of_range_numbers_in_a_spec_are_errors() {
    let bad = BASE.replace(
        "precision = \"bf16\"",
        "precision = \"bf16\"\nadam_beta1 = 1.0\nmax_grad_norm = -2",
    );
    let (v, diags) = jobspec::validate_toml(&format!(
        "{bad}\n[deepspeed]\nreduce_bucket_size = 0\noverlap_comm = 1\n"
    ));
    assert!(v.is_none());
    let errors: Vec<&str> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        errors,
        [
            "train.adam_beta1",
            "train.max_grad_norm",
            "deepspeed.reduce_bucket_size",
            "deepspeed.overlap_comm"
        ]
    );
    // A spec built in code is held to the same ranges.
    let (v, _) = jobspec::validate_toml(BASE);
    let mut spec = v.unwrap().spec().clone();
    spec.train.adam_epsilon = Some(0.0);
    spec.deepspeed.reduce_bucket_size = Some(0);
    let (v, diags) = jobspec::validate_spec(spec);
    assert!(v.is_none());
    let errors: Vec<&str> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        errors,
        ["train.adam_epsilon", "deepspeed.reduce_bucket_size"]
    );
}
