//! `[eval]`: what a spec may say about evaluating its run, what is refused and how it reaches the
//! trainer's run.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use expect_test::{Expect, expect};
use jobspec::trainer::trainer_run;
use jobspec::{Lang, Severity, validate_toml};

const BASE: &str = r#"name = "m"
task = "lora"
model = "qwen2.5-7b"
[data]
dataset = "d"
tokens = 1000000
seq_len = 256
[train]
steps = 100
[resources]
card = "a100-80g"
time_limit = "2h"
"#;

/// The errors and warnings (not the infos) `[eval]` adds to [`BASE`], in both languages.
fn check(eval: &str, expect: Expect) {
    let (valid, diags) = validate_toml(&format!("{BASE}[eval]\n{eval}"));
    let mut out = String::new();
    for d in diags.iter().filter(|d| d.severity != Severity::Info) {
        out.push_str(&format!(
            "{}:{} {} {} {}: {}\n",
            d.line,
            d.column,
            d.severity.as_str(),
            d.code.as_str(),
            d.path,
            d.message.get(Lang::En)
        ));
        assert!(!d.message.get(Lang::Zh).is_empty(), "{d:?}");
        if let Some(h) = &d.help {
            out.push_str(&format!("  help: {}\n", h.en));
        }
    }
    out.push_str(&format!("valid: {}\n", valid.is_some()));
    expect.assert_eq(&out);
}

#[test]
fn an_eval_table_reaches_the_trainers_run_with_its_defaults_filled_in() {
    let (valid, diags) = validate_toml(&format!(
        "{BASE}[eval]\nholdout = 0.1\nevery_steps = 10\nprompts = [\"Say hi.\", \"两行\\n提示\"]\n"
    ));
    let v = valid.unwrap_or_else(|| panic!("{diags:?}"));
    let e = trainer_run(&v).plan.eval;
    assert_eq!(e.holdout, Some(0.1));
    assert_eq!(e.dataset, None);
    assert_eq!(e.every_steps, 10);
    assert_eq!(e.prompts, ["Say hi.", "两行\n提示"]);
    assert_eq!(e.max_new_tokens, 64);
    assert_eq!(e.max_examples, 256);

    // Without [eval]: five evaluations a run on 5% of the data, and the eval set's own prompts.
    let (valid, _) = validate_toml(BASE);
    let e = trainer_run(&valid.unwrap()).plan.eval;
    assert_eq!((e.holdout, e.every_steps), (Some(0.05), 20));
    assert!(e.prompts.is_empty() && e.default_prompts > 0);

    let (valid, _) = validate_toml(&format!("{BASE}[eval]\ndataset = \"held-out.jsonl\"\n"));
    let e = trainer_run(&valid.unwrap()).plan.eval;
    assert_eq!(
        (e.holdout, e.dataset.as_deref()),
        (None, Some("held-out.jsonl"))
    );
}

#[test]
fn a_task_that_is_not_well_known_is_warned_of_with_the_nearest_name() {
    check(
        "tasks = [\"mmlux\"]\n",
        expect![[r#"
            14:9 warning suspicious eval.tasks: `eval.tasks` has "mmlux", which is not one of the well-known tasks (arc_challenge, arc_easy, boolq, ceval-valid, cmmlu, gsm8k, hellaswag, lambada_openai, mmlu, piqa, truthfulqa_mc2, winogrande); it runs only where the cluster has it (its task folder or lm-eval's own tasks, with their data), which the job checks before it trains
              help: did you mean `mmlu`?
            valid: true
        "#]],
    );
}

#[test]
fn known_tasks_with_fewshot_and_a_cap_reach_the_trainers_run() {
    let eval = "tasks = [\"cmmlu\", \"mmlu\"]\nfewshot = 5\ntask_max_examples = 200\n";
    check(
        eval,
        expect![[r#"
            valid: true
        "#]],
    );
    let (valid, _) = validate_toml(&format!("{BASE}[eval]\n{eval}"));
    let e = trainer_run(&valid.unwrap()).plan.eval;
    assert_eq!(e.tasks, ["cmmlu", "mmlu"]);
    assert_eq!((e.fewshot, e.task_max_examples), (5, Some(200)));
}

#[test]
fn task_names_that_are_not_names_twice_listed_or_too_many_are_refused() {
    check(
        "tasks = [\"mmlu; rm -rf /\", \"../x\", \"\", \"cmmlu\", \"cmmlu\"]\nfewshot = 26\n",
        expect![[r#"
            14:9 error bad-value eval.tasks: task 1 of `eval.tasks` is not a task name: use ASCII letters, digits, `_`, `-` and `.`, starting with a letter or a digit, at most 64 characters
            14:9 error bad-value eval.tasks: task 2 of `eval.tasks` is not a task name: use ASCII letters, digits, `_`, `-` and `.`, starting with a letter or a digit, at most 64 characters
            14:9 error bad-value eval.tasks: task 3 of `eval.tasks` is not a task name: use ASCII letters, digits, `_`, `-` and `.`, starting with a letter or a digit, at most 64 characters
            14:9 error bad-value eval.tasks: `eval.tasks` lists "cmmlu" twice
            15:11 error out-of-range eval.fewshot: `eval.fewshot` = 26 is out of range (0 to 25)
            valid: false
        "#]],
    );
    let many: Vec<String> = (0..17).map(|i| format!("\"t{i}\"")).collect();
    let (valid, diags) = validate_toml(&format!("{BASE}[eval]\ntasks = [{}]\n", many.join(", ")));
    assert!(valid.is_none());
    assert!(
        diags
            .iter()
            .any(|d| d.message.en.contains("lists 17 tasks; at most 16")),
        "{diags:?}"
    );
}

#[test]
fn fewshot_without_tasks_is_warned_of() {
    check(
        "fewshot = 5\n",
        expect![[r#"
            14:11 warning suspicious eval.fewshot: `eval.fewshot` and `eval.task_max_examples` apply to `eval.tasks`, which lists none: they do nothing
            valid: true
        "#]],
    );
}

#[test]
fn a_prompt_too_long_for_seq_len_with_its_answer_is_refused() {
    let long = "word ".repeat(700);
    check(
        &format!("prompts = [\"short\", \"{long}\"]\n"),
        expect![[r#"
            14:11 error conflict eval.prompts: prompt 2 of `eval.prompts` (3500 bytes) is at least 219 tokens; with its answer of up to `eval.max_new_tokens` = 64 it does not fit in `data.seq_len` = 256: shorten the prompt, lower `eval.max_new_tokens`, or raise `data.seq_len`
            valid: false
        "#]],
    );
    check(
        "max_new_tokens = 256\n",
        expect![[r#"
            14:18 error conflict eval.max_new_tokens: `eval.max_new_tokens` = 256 leaves no room for a prompt in `data.seq_len` = 256; make it smaller than 256
            valid: false
        "#]],
    );
}

#[test]
fn bad_eval_sets_and_prompts_are_refused() {
    check(
        "holdout = 0.1\ndataset = \"x.jsonl\"\n",
        expect![[r#"
            14:11 error conflict eval.holdout: `eval.holdout` holds out a share of the training data and `eval.dataset` names a dataset of its own: keep one of them
            valid: false
        "#]],
    );
    check(
        "dataset = \"../../etc/passwd\"\n",
        expect![[r#"
            14:11 error bad-value eval.dataset: `eval.dataset` = "../../etc/passwd" leaves its folder through `..`; a job reads only a dataset of its own: upload the file (`onramp datasets upload FILE`, or the Plan page) and name the `ds_…` id it gives, or name a dataset the cluster holds by its id (such as `alpaca-zh`)
            valid: false
        "#]],
    );
    check(
        "dataset = \" \"\n",
        expect![[r#"
            14:11 error bad-value eval.dataset: `eval.dataset` is empty
            14:11 error bad-text eval.dataset: `eval.dataset` holds ` ` (U+0020) at character 1; a dataset id or path may use letters, digits and - _ . / : @ + = ~ , %
            valid: false
        "#]],
    );
    check(
        "holdout = 0.9\nprompts = [\"  \", \"a\\u202eb\"]\nevery_steps = 1000\n",
        expect![[r#"
            14:11 error out-of-range eval.holdout: `eval.holdout` = 0.9 is out of range (0.001 to 0.5)
            15:11 error bad-value eval.prompts: prompt 1 of `eval.prompts` is empty
            15:11 error bad-text eval.prompts: `eval.prompts` holds a text-direction control (U+202E) at character 2; a prompt must be visible text (line feeds and tabs allowed)
            16:15 warning suspicious eval.every_steps: `eval.every_steps` = 1000 is more than the run's 100 steps: it evaluates only before and after training
            valid: false
        "#]],
    );
}

/// A spec as large as the edge takes (256 KiB) of empty prompts is refused in a few
/// diagnostics, not one per prompt, so it costs no more to check than a short list.
#[test]
fn a_huge_list_of_prompts_is_refused_in_a_few_diagnostics() {
    let prompts = vec!["''"; 80_000].join(",");
    let src = format!("{BASE}[eval]\nprompts = [{prompts}]\n");
    assert!(src.len() > 200_000);
    let (valid, diags) = validate_toml(&src);
    assert!(valid.is_none());
    assert!(diags.len() <= 10, "{} diagnostics", diags.len());
    assert!(
        diags
            .iter()
            .any(|d| d.message.en.contains("lists 80000 prompts; at most 16")),
        "{diags:?}"
    );
}

#[test]
fn an_uploaded_eval_set_is_accepted_and_the_training_set_warned() {
    check(
        "dataset = \"ds_0123456789abcdef0123456789abcdef\"\n",
        expect![[r#"
            valid: true
        "#]],
    );
    let trains_on = BASE
        .lines()
        .find(|l| l.starts_with("dataset = "))
        .expect("the base spec names its dataset");
    check(
        &format!("{trains_on}\n"),
        expect![[r#"
        14:11 warning suspicious eval.dataset: `eval.dataset` = "d" is the dataset it trains on: its loss measures how well the model remembers it; hold out a share instead (`eval.holdout`)
        valid: true
    "#]],
    );
}

#[test]
fn the_default_answer_length_never_refuses_a_short_sequence() {
    for seq_len in [1, 2, 3, 64] {
        let (valid, diags) =
            validate_toml(&BASE.replace("seq_len = 256", &format!("seq_len = {seq_len}")));
        let v = valid.unwrap_or_else(|| panic!("seq_len {seq_len}: {diags:?}"));
        let e = trainer_run(&v).plan.eval;
        assert!(
            e.max_new_tokens >= 1 && e.max_new_tokens <= seq_len.max(1),
            "{seq_len}"
        );
    }
}

#[test]
fn tiny_train_takes_no_eval_table() {
    let spec = r#"name = "t"
task = "tiny-train"
model = "stories260k"
[data]
dataset = "tinyshakespeare"
seq_len = 64
[train]
steps = 10
[resources]
card = "cpu"
[eval]
holdout = 0.2
"#;
    let (valid, diags) = validate_toml(spec);
    assert!(valid.is_none());
    assert!(
        diags
            .iter()
            .any(|d| d.path == "eval" && d.message.get(Lang::En).contains("tiny-train")),
        "{diags:?}"
    );
}

#[test]
fn tasks_are_refused_where_no_one_rank_holds_the_whole_model() {
    let spread = BASE.replace(
        "[resources]\n",
        "[parallel]\nzero_stage = 3\n[resources]\ncards_per_node = 8\n",
    );
    let (valid, diags) = validate_toml(&format!("{spread}[eval]\ntasks = [\"mmlu\"]\n"));
    assert!(valid.is_none());
    let d = diags.iter().find(|d| d.path == "eval.tasks").unwrap();
    assert!(d.message.en.contains("zero_stage` = 3"), "{d:?}");
    // Without tasks the same job is valid.
    assert!(validate_toml(&spread).0.is_some(), "{diags:?}");
    // Tensor parallelism slices every layer over ranks: no rank holds the whole model either.
    let sliced = spread
        .replace("zero_stage = 3\n", "zero_stage = 1\ntp = 2\n")
        .replace("task = \"lora\"", "task = \"sft\"");
    assert!(validate_toml(&sliced).0.is_some());
    let (valid, diags) = validate_toml(&format!("{sliced}[eval]\ntasks = [\"mmlu\"]\n"));
    assert!(valid.is_none());
    let d = diags.iter().find(|d| d.path == "eval.tasks").unwrap();
    assert!(d.message.en.contains("`parallel.tp` = 2 slices"), "{d:?}");
    assert!(d.message.zh.contains("切到多个 rank"), "{d:?}");
}
