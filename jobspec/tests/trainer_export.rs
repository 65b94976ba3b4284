//! Exports what `onramp-train` must derive into the trainer's tree, so that its own tests can
//! compare: the model catalogue it ships (`trainer/src/onramp_train/catalog.json`) and, for every
//! template and a range of generated specs, jobspec's trainer plan and ds_config
//! (`trainer/tests/fixtures/derived.json`). `UPDATE_EXPECT=1 cargo test -p jobspec --test
//! trainer_export` rewrites both; then the trainer's pytest tells whether it still agrees.

#![allow(clippy::unwrap_used)]

use expect_test::expect_file;
use jobspec::trainer::{catalog_export, spec_toml, trainer_ds_config, trainer_plan};
use jobspec::validate_toml;
use serde_json::{Value, json};

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

#[test]
fn catalog_for_the_trainer_is_current() {
    expect_file!["../../trainer/src/onramp_train/catalog.json"]
        .assert_eq(&pretty(&catalog_export()));
}

const MODELS: &[&str] = &[
    "model = \"qwen2.5-7b\"",
    "model = \"llama-3-8b\"",
    "model = \"chatglm3-6b\"",
    "model = \"stories260K\"",
    "model = \"deepseek-llm-7b\"",
    "[model]\nname = \"mini\"\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\nffn = 172\nvocab = 512\ntied_embeddings = true",
];
const TASKS: &[&str] = &["pretrain", "sft", "lora", "qlora"];
/// card, cards per node, nodes.
const CARDS: &[(&str, u32, u32)] = &[
    ("a100-80g", 8, 1),
    ("rtx-4090", 1, 1),
    ("h100", 8, 2),
    ("cpu", 1, 1),
    ("a100-80g", 2, 1),
];
const PARALLEL: &[&str] = &[
    "",
    "[parallel]\nzero_stage = 2\n",
    "[parallel]\nzero_stage = 3\noffload_optimizer = \"cpu\"\n",
    "[parallel]\nzero_stage = 3\noffload_optimizer = \"cpu\"\noffload_params = \"cpu\"\n",
    "[parallel]\nzero_stage = 1\ntp = 2\n",
];
const LENGTHS: &[&str] = &["steps = 40", "epochs = 2", "epochs = 0.5", "", "steps = 7"];
const TRAIN_EXTRA: &[&str] = &[
    "",
    "schedule = \"linear\"\nwarmup = 5\nprecision = \"fp32\"\nseed = 7",
    "schedule = \"constant\"\ngrad_checkpointing = \"selective\"\noptimizer = \"sgd\"",
    "grad_checkpointing = true\nlora_rank = 8\nlora_targets = [\"all-linear\"]",
    "precision = \"fp16\"\nlora_alpha = 64\nlora_targets = [\"q_proj\", \"v_proj\", \"down_proj\"]",
];
const TAILS: &[&str] = &[
    "",
    "[checkpoint]\nevery_steps = 10\nevery_minutes = 0\nkeep = 1\nresume = false\n",
    "[output]\nmerge_adapter = true\nreport_to = [\"tensorboard\"]\n",
];

/// The i-th generated spec: each axis steps through its choices at its own stride, so that the
/// combinations vary without a full product.
fn generated(i: usize) -> String {
    let pick =
        |list: &[&'static str], stride: usize| list[(i * stride + i / list.len()) % list.len()];
    let (card, cards, nodes) = CARDS[(i * 3) % CARDS.len()];
    format!(
        "name = \"gen-{i}\"\ntask = \"{}\"\n{}\n\n[data]\ndataset = \"alpaca-zh\"\ntokens = {}\nseq_len = {}\n\n[train]\n{}\nmicro_batch = {}\ngrad_accum = {}\nlr = 1e-4\n{}\n\n{}[resources]\ncard = \"{card}\"\ncards_per_node = {cards}\nnodes = {nodes}\ntime_limit = \"12h\"\n\n{}",
        pick(TASKS, 1),
        pick(MODELS, 5),
        1_000_000 + 12_345 * i,
        [128, 512, 2048, 4096][i % 4],
        pick(LENGTHS, 3),
        1 + i % 4,
        1 + (i / 2) % 8,
        pick(TRAIN_EXTRA, 7),
        pick(PARALLEL, 2),
        pick(TAILS, 11),
    )
}

#[test]
fn derived_values_for_the_trainer_are_current() {
    let mut sources: Vec<(String, String)> = jobspec::templates()
        .iter()
        .map(|t| (format!("template {}", t.id), t.toml.to_string()))
        .collect();
    sources.extend((0..120).map(|i| (format!("generated {i}"), generated(i))));
    let mut cases = Vec::new();
    for (source, toml) in sources {
        let (valid, _) = validate_toml(&toml);
        let Some(v) = valid else { continue };
        if v.spec().task == jobspec::spec::Task::TinyTrain {
            continue;
        }
        // What the sbatch script writes for the trainer reads back as the same plan.
        let written = spec_toml(&v);
        let again = validate_toml(&written)
            .0
            .expect("the written spec validates");
        assert_eq!(trainer_plan(&again), trainer_plan(&v), "{source}");
        cases.push(json!({
            "source": source,
            "toml": toml,
            "written": written,
            "plan": trainer_plan(&v),
            "ds_config": trainer_ds_config(&v),
        }));
    }
    let tasks: Vec<&str> = cases
        .iter()
        .filter_map(|c| c["plan"]["task"].as_str())
        .collect();
    for task in ["pretrain", "sft", "lora", "qlora"] {
        assert!(
            tasks.iter().filter(|t| **t == task).count() >= 3,
            "too few valid generated specs with task {task}: {tasks:?}"
        );
    }
    assert!(
        cases.len() >= 40,
        "only {} valid specs to compare",
        cases.len()
    );
    expect_file!["../../trainer/tests/fixtures/derived.json"].assert_eq(&pretty(&json!(cases)));
}

/// What a GPU job carries as `onramp-plan.json` (see `jobspec::launch::PLAN_FILE`) for two
/// templates, one that fits and one that does not: the trainer's tests read these to check its
/// out-of-memory message quotes the plan.
#[test]
fn the_oom_advice_the_trainer_reads() {
    let mut cases = serde_json::Map::new();
    for (name, src) in [
        ("7b-lora-4090", include_str!("../specs/7b-lora-4090.toml")),
        ("7b-full-4090", include_str!("../specs/7b-full-4090.toml")),
    ] {
        let (valid, diags) = jobspec::validate_toml(src);
        let v = valid.unwrap_or_else(|| panic!("{name}: {diags:?}"));
        let advice: serde_json::Value =
            serde_json::from_str(&jobspec::launch::oom_advice_json(&v)).expect("JSON");
        cases.insert(name.into(), json!({"spec": src, "advice": advice}));
    }
    expect_file!["../../trainer/tests/fixtures/oom-advice.json"]
        .assert_eq(&pretty(&serde_json::Value::Object(cases)));
}
