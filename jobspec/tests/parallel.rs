//! `parallel.tp` as onramp-train runs it (DeepSpeed's AutoTP on the model's Hugging Face
//! `tp_plan`): the ds_config it writes, and the splits it refuses, in both languages.

use jobspec::{Lang, ValidSpec, validate_toml};

const MINIMAL: &str = r#"name = "m"
task = "sft"
model = "qwen2.5-7b"
[data]
dataset = "d"
tokens = 1000000
seq_len = 1024
[resources]
card = "a100-80g"
"#;

/// A spec of `model` and `task` on 8 A100s with `parallel`: the valid spec, if it is, and its
/// errors in English (with their paths) and in Chinese.
fn tp_spec(model: &str, task: &str, parallel: &str) -> (Option<ValidSpec>, Vec<(String, String)>) {
    let src = MINIMAL
        .replace("qwen2.5-7b", model)
        .replace("task = \"sft\"", &format!("task = \"{task}\""))
        .replace(
            "[resources]\ncard = \"a100-80g\"\n",
            &format!(
                "[train]\nsteps = 10\n[parallel]\n{parallel}\n\
                 [resources]\ncard = \"a100-80g\"\ncards_per_node = 8\ntime_limit = \"1h\"\n"
            ),
        );
    let (valid, diags) = validate_toml(&src);
    let errors: Vec<(String, String)> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let m = &d.message;
            (
                format!("{}: {}", d.path, m.get(Lang::En)),
                m.get(Lang::Zh).to_string(),
            )
        })
        .collect();
    (valid, errors)
}

/// `parallel.tp` runs as DeepSpeed's AutoTP on the model's Hugging Face `tp_plan`: the ds_config
/// carries its size and gathers the slices on save; what AutoTP cannot split is refused, in both
/// languages.
#[test]
fn tensor_parallelism_runs_for_a_full_training() {
    let tp = tp_spec;
    // Llama 3 8B: 32 heads, 8 key/value heads, ffn 14336: tp = 4 splits them all.
    let (valid, errors) = tp("llama-3-8b", "sft", "zero_stage = 1\ntp = 4");
    let valid = valid.unwrap_or_else(|| panic!("{errors:?}"));
    assert_eq!(valid.dp(), 2);
    let ds = jobspec::deepspeed::engine_config(&valid);
    assert_eq!(ds["tensor_parallel"]["autotp_size"], 4, "{ds}");
    assert_eq!(ds["train_batch_size"], valid.global_batch(), "{ds}");
    assert_eq!(
        ds["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"], true,
        "{ds}"
    );
    let run = jobspec::trainer::trainer_run(&valid);
    assert_eq!(run.ds_config.as_ref(), Some(&ds));
    // Without tp, no AutoTP section.
    let (plain, _) = tp("llama-3-8b", "sft", "zero_stage = 1");
    let plain = jobspec::deepspeed::engine_config(&plain.expect("valid"));
    assert!(plain.get("tensor_parallel").is_none(), "{plain}");
}

#[test]
fn tensor_parallelism_is_refused_where_autotp_cannot_split_the_job() {
    let refused = |model: &str, task: &str, parallel: &str, en: &str, zh: &str| {
        let (valid, errors) = tp_spec(model, task, parallel);
        assert!(valid.is_none(), "{model} {task} {parallel}");
        assert!(
            errors.iter().any(|(e, z)| e.contains(en) && z.contains(zh)),
            "{model} {task} {parallel}: {errors:#?}"
        );
    };
    refused(
        "llama-3-8b",
        "lora",
        "tp = 2",
        "parallel.tp: tp = 2 splits every weight",
        "只在冻结的底座上训练适配器",
    );
    refused(
        "llama-3-8b",
        "sft",
        "zero_stage = 3\ntp = 2",
        "parallel.zero_stage: tp = 2 runs as DeepSpeed's AutoTP",
        "不能与 3 同用",
    );
    refused(
        "llama-3-8b",
        "sft",
        "sp = 2\ntp = 2",
        "tp = 2 and sp = 2 together are not run",
        "不能同时运行",
    );
    // Qwen2.5 7B has 4 key/value heads.
    refused(
        "qwen2.5-7b",
        "sft",
        "tp = 8",
        "tp = 8 must divide the 4 key/value heads",
        "个键值头",
    );
    refused(
        "chatglm3-6b",
        "sft",
        "tp = 2",
        "has no Hugging Face tp_plan",
        "tp_plan",
    );
}
