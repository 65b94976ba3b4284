//! Fix suggestions are patches that really make the spec fit, applied to a spec or to its text.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use expect_test::expect;
use jobspec::patch::apply_patch_toml;
use jobspec::patch::{PatchOp, apply_patch};
use jobspec::{plan_toml, validate_toml};
use serde_json::json;

const FULL_4090: &str = include_str!("../specs/7b-full-4090.toml");

#[test]
fn every_suggestion_fits_when_applied_to_the_text() {
    let plan = plan_toml(FULL_4090);
    assert!(!plan.suggestions.is_empty());
    for s in &plan.suggestions {
        let text = apply_patch_toml(FULL_4090, &s.patch).expect("patchable in place");
        assert!(
            text.starts_with("#:schema ../schema/jobspec.schema.json\n# A 7B full fine-tune"),
            "comments kept"
        );
        let patched = plan_toml(&text);
        let mem = &patched.estimate.as_ref().unwrap().memory;
        assert!(mem.fits, "{}: {text}", s.title.en);
        assert_eq!(mem.per_gpu.total_bytes, s.per_gpu_bytes);
    }
}

#[test]
fn patch_text_in_place_and_new_tables() {
    let ops = vec![
        PatchOp {
            path: "parallel.zero_stage".into(),
            value: json!(3),
        },
        PatchOp {
            path: "train.micro_batch".into(),
            value: json!(1),
        },
        PatchOp {
            path: "train.grad_checkpointing".into(),
            value: json!(true),
        },
        PatchOp {
            path: "backend".into(),
            value: json!("slurm"),
        },
    ];
    let text = apply_patch_toml(FULL_4090, &ops).unwrap();
    expect![[r##"
        #:schema ../schema/jobspec.schema.json
        # A 7B full fine-tune on one RTX 4090: the classic "24 GB blew up".
        name = "7b-full-on-a-4090"
        task = "sft"
        model = "qwen2.5-7b"

        backend = "slurm"
        [data]
        dataset = "alpaca-zh"
        tokens = 20_000_000
        seq_len = 2048

        [train]
        grad_checkpointing = true
        epochs = 1
        micro_batch = 1
        grad_accum = 4
        lr = 1e-5

        [resources]
        card = "rtx-4090"
        time_limit = "24h"

        [parallel]
        zero_stage = 3
    "##]]
    .assert_eq(&text);
    let (valid, _) = validate_toml(&text);
    assert_eq!(valid.unwrap().spec().parallel.zero_stage, 3);
}

#[test]
fn patch_spec_and_canonical_toml_round_trip() {
    for t in jobspec::templates() {
        let (Some(v), _) = validate_toml(t.toml) else {
            panic!("{}", t.id)
        };
        let text = v.spec().to_toml();
        let (again, diags) = validate_toml(&text);
        assert_eq!(
            again.as_ref().map(|a| a.spec()),
            Some(v.spec()),
            "{}: {diags:#?}\n{text}",
            t.id
        );
    }
    let (Some(v), _) = validate_toml(FULL_4090) else {
        panic!()
    };
    let bad = apply_patch(
        v.spec(),
        &[PatchOp {
            path: "parallel.zero_stage".into(),
            value: json!(7),
        }],
    );
    assert!(bad.is_err());
}

/// A spec whose eval set is a dataset of its own reads back from its canonical TOML, from its
/// JSON and through a patch: the default `eval.holdout`, which the reader refuses next to
/// `eval.dataset`, is not written out.
#[test]
fn a_spec_with_an_eval_dataset_survives_its_canonical_text_and_a_patch() {
    let eval_dataset = FULL_4090.to_string() + "\n[eval]\ndataset = \"held-out.jsonl\"\n";
    let (valid, diags) = validate_toml(&eval_dataset);
    let v = valid.unwrap_or_else(|| panic!("{diags:#?}"));
    let text = v.spec().to_toml();
    assert!(!text.contains("holdout"), "{text}");
    let (again, diags) = validate_toml(&text);
    assert_eq!(
        again.as_ref().map(|a| a.spec()),
        Some(v.spec()),
        "{diags:#?}\n{text}"
    );
    let json = serde_json::to_string(v.spec()).unwrap();
    let (again, diags) = jobspec::validate_json(&json);
    assert_eq!(
        again.as_ref().map(|a| a.spec()),
        Some(v.spec()),
        "{diags:#?}"
    );
    let patched = apply_patch(
        v.spec(),
        &[PatchOp {
            path: "train.micro_batch".into(),
            value: json!(1),
        }],
    )
    .unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(patched.eval.dataset.as_deref(), Some("held-out.jsonl"));
    assert!(validate_toml(&patched.to_toml()).0.is_some());
    // A share other than the default is still written, and read back.
    let share = FULL_4090.to_string() + "\n[eval]\nholdout = 0.1\n";
    let (Some(v), _) = validate_toml(&share) else {
        panic!()
    };
    let (again, _) = validate_toml(&v.spec().to_toml());
    assert_eq!(again.unwrap().spec().eval.holdout, 0.1);
}
