//! Property tests: no input — random text, mutated templates, random JSON, random form values,
//! random ds_configs or share links — makes the crate panic. `PROPTEST_CASES=N` runs more.
#![cfg(not(target_arch = "wasm32"))]
// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use jobspec::spec::{Offload, Precision, Recompute, Task};
use jobspec::{plan_json, plan_spec, plan_toml, validate_toml};
use proptest::prelude::*;

fn templates() -> Vec<&'static str> {
    jobspec::templates().iter().map(|t| t.toml).collect()
}

/// A template with a few random edits: bytes replaced, lines dropped or duplicated, numbers
/// swapped for extreme values.
fn mutated() -> impl Strategy<Value = String> {
    let edits = prop::collection::vec((0usize..4, any::<prop::sample::Index>(), ".{0,12}"), 1..6);
    (prop::sample::select(templates()), edits).prop_map(|(t, edits)| {
        let mut lines: Vec<String> = t.lines().map(String::from).collect();
        for (kind, at, text) in edits {
            if lines.is_empty() {
                break;
            }
            let i = at.index(lines.len());
            match kind {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let l = lines[i].clone();
                    lines.insert(i, l);
                }
                2 => {
                    // Replace the value after `=` with random text or an extreme number.
                    if let Some((k, _)) = lines[i].split_once('=') {
                        let extreme = [
                            "0",
                            "-1",
                            "18446744073709551615",
                            "1e308",
                            "nan",
                            "\"\"",
                            "[]",
                            "{}",
                            "true",
                        ];
                        let v = extreme
                            .get(text.len() % 12)
                            .map_or(text.clone(), |s| s.to_string());
                        lines[i] = format!("{k}= {v}");
                    }
                }
                _ => {
                    let mut l = lines[i].clone();
                    let cut = (text.len() * 7) % (l.len() + 1);
                    let cut = (0..=cut)
                        .rev()
                        .find(|c| l.is_char_boundary(*c))
                        .unwrap_or(0);
                    l.insert_str(cut, &text);
                    lines[i] = l;
                }
            }
        }
        lines.join("\n")
    })
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "[a-z_]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "name",
                    "task",
                    "model",
                    "data",
                    "train",
                    "parallel",
                    "resources",
                    "estimate",
                    "seq_len",
                    "tokens",
                    "dataset",
                    "card",
                    "micro_batch",
                    "zero_stage",
                    "tp",
                    "sp",
                    "time_limit",
                    "lora_rank",
                    "epochs",
                    "steps",
                    "layers",
                    "hidden",
                    "heads",
                ]),
                inner,
                0..8,
            )
            .prop_map(|m| serde_json::Value::Object(
                m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn random_text_never_panics(src in "\\PC{0,400}") {
        let _ = plan_toml(&src);
        let _ = plan_json(&src);
        let _ = jobspec::deepspeed::import_ds_config(&src, Some(8));
        let _ = jobspec::share::decode(&src);
    }

    #[test]
    fn mutated_templates_never_panic(src in mutated()) {
        let plan = plan_toml(&src);
        // Errors and a valid spec never come together.
        prop_assert!(!(plan.has_errors() && plan.valid.is_some() && plan.estimate.is_none()));
        let _ = jobspec::report::render_text(&plan, jobspec::Lang::Zh, true);
        let _ = serde_json::to_string(&jobspec::PlanWire::from(&plan));
    }

    #[test]
    fn random_json_never_panics(v in arbitrary_json()) {
        let text = v.to_string();
        let _ = plan_json(&text);
        let _ = jobspec::deepspeed::import_ds_config(&text, Some(3));
    }

    #[test]
    fn random_form_values_never_panic(
        t in 0usize..4,
        tp in 0u32..2000, pp in 0u32..2000, sp in 0u32..2000, zero in 0u8..6,
        micro in 0u32..100_000, accum in 0u32..100_000, seq in 0u32..300_000,
        per_node in 0u32..100, nodes in 0u32..5000, off in 0usize..3,
        task in 0usize..5, prec in 0usize..3, rec in 0usize..3, steps in prop::option::of(0u64..u64::MAX),
        lr in any::<f64>(), mfu in prop::option::of(any::<f64>()),
    ) {
        let (Some(v), _) = validate_toml(templates()[t]) else { panic!("template invalid") };
        let mut s = v.spec().clone();
        s.parallel.tp = tp; s.parallel.pp = pp; s.parallel.sp = sp; s.parallel.zero_stage = zero;
        s.train.micro_batch = micro; s.train.grad_accum = accum; s.data.seq_len = seq;
        s.resources.cards_per_node = per_node; s.resources.nodes = nodes;
        s.parallel.offload_optimizer = [Offload::None, Offload::Cpu, Offload::Nvme][off];
        s.parallel.offload_params = [Offload::None, Offload::Cpu, Offload::Nvme][2 - off];
        s.task = [Task::Pretrain, Task::Sft, Task::Lora, Task::Qlora, Task::TinyTrain][task];
        s.train.precision = [Precision::Bf16, Precision::Fp16, Precision::Fp32][prec];
        s.train.grad_checkpointing = [Recompute::None, Recompute::Selective, Recompute::Full][rec];
        s.train.steps = steps; s.train.epochs = None; s.train.lr = lr; s.estimate.mfu = mfu;
        let plan = plan_spec(s);
        if let Some(e) = &plan.estimate {
            prop_assert!(e.memory.per_gpu.total_bytes >= e.memory.per_gpu.params_bytes);
        }
    }
}
