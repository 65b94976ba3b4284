//! Exports into the trainer's tree what it ships and what its tests read: the model catalogue
//! (`trainer/src/onramp_train/catalog.json`), the JSON Schema of the run it reads
//! (`trainer/src/onramp_train/run.schema.json`), and the run of every template and a range of
//! generated specs (`trainer/tests/fixtures/runs.jsonl`, one run a line), each checked here
//! against that schema with a validator that is not ours. `UPDATE_EXPECT=1 cargo test -p jobspec
//! --test trainer_export` rewrites them; then the trainer's pytest tells whether its strict
//! loader still reads every run.

#![allow(clippy::unwrap_used)]

use expect_test::expect_file;
use jobspec::trainer::{RUN_VERSION, catalog_export, run_json, run_schema, spec_toml, trainer_run};
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
    "schedule = \"constant\"\ngrad_checkpointing = \"full\"\noptimizer = \"sgd\"",
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

/// The run's schema, compiled by a validator that is not ours.
fn compiled_run_schema() -> (boon::Schemas, boon::SchemaIndex) {
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("run.schema.json", run_schema())
        .unwrap();
    let schema = compiler.compile("run.schema.json", &mut schemas).unwrap();
    (schemas, schema)
}

#[test]
fn the_run_schema_the_trainer_ships_is_current() {
    expect_file!["../../trainer/src/onramp_train/run.schema.json"]
        .assert_eq(&pretty(&run_schema()));
}

#[test]
fn every_run_matches_its_schema_and_the_corpus_is_current() {
    let mut sources: Vec<(String, String)> = jobspec::templates()
        .iter()
        .map(|t| (format!("template {}", t.id), t.toml.to_string()))
        .collect();
    // Two specs for the out-of-memory message: one the plan says fits, one it says does not.
    sources.push((
        "spec 7b-lora-4090".into(),
        include_str!("../specs/7b-lora-4090.toml").into(),
    ));
    sources.push((
        "spec 7b-full-4090".into(),
        include_str!("../specs/7b-full-4090.toml").into(),
    ));
    sources.extend((0..120).map(|i| (format!("generated {i}"), generated(i))));
    let (schemas, schema) = compiled_run_schema();
    let mut lines = String::new();
    let mut tasks = Vec::new();
    for (source, toml) in sources {
        let (valid, _) = validate_toml(&toml);
        let Some(v) = valid else { continue };
        if v.spec().task == jobspec::spec::Task::TinyTrain {
            continue;
        }
        // The spec a job's folder keeps reads back as the same run.
        let written = spec_toml(&v);
        let again = validate_toml(&written)
            .0
            .expect("the written spec validates");
        assert_eq!(trainer_run(&again), trainer_run(&v), "{source}");
        let run: Value = serde_json::from_str(&run_json(&v)).unwrap();
        assert_eq!(run["version"], RUN_VERSION, "{source}");
        if let Err(e) = schemas.validate(&run, schema) {
            panic!("{source}: the run does not match its schema: {e}");
        }
        tasks.push(run["plan"]["task"].as_str().unwrap().to_string());
        lines.push_str(&serde_json::to_string(&json!({"source": source, "run": run})).unwrap());
        lines.push('\n');
    }
    for task in ["pretrain", "sft", "lora", "qlora"] {
        assert!(
            tasks.iter().filter(|t| *t == task).count() >= 3,
            "too few valid generated specs with task {task}: {tasks:?}"
        );
    }
    assert!(tasks.len() >= 40, "only {} valid specs", tasks.len());
    expect_file!["../../trainer/tests/fixtures/runs.jsonl"].assert_eq(&lines);
}

/// The schema refuses what the trainer's loader refuses: another version, a key it does not
/// know, a key missing, a value of the wrong type.
#[test]
fn the_schema_refuses_another_version_an_unknown_key_and_a_missing_one() {
    let (schemas, schema) = compiled_run_schema();
    let (v, _) = validate_toml(include_str!("../specs/7b-lora-4090.toml"));
    let run: Value = serde_json::from_str(&run_json(&v.unwrap())).unwrap();
    assert!(schemas.validate(&run, schema).is_ok());
    let mut broken = Vec::new();
    let mut r = run.clone();
    r["version"] = json!(RUN_VERSION + 1);
    broken.push(("version", r));
    let mut r = run.clone();
    r["plan"]["lora"]["scale"] = json!(2);
    broken.push(("unknown key", r));
    let mut r = run.clone();
    r["plan"].as_object_mut().unwrap().remove("max_steps");
    broken.push(("missing key", r));
    let mut r = run;
    r["plan"]["micro_batch"] = json!("4");
    broken.push(("wrong type", r));
    for (what, r) in broken {
        assert!(schemas.validate(&r, schema).is_err(), "{what} passed");
    }
}
