//! What the trainer or a backend would refuse once the job is dispatched, refused by the plan
//! instead: tiny-train on a GPU or with gradient accumulation, a custom model whose heads have an
//! odd dimension, a learning rate of 0, a time limit no backend runs. And what a spec cannot do
//! to its diagnostics: a long name is counted in characters, user text cannot break or forge a
//! line of the printed diagnostics, and thousands of bad items cost a few diagnostics.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use jobspec::report::render_diagnostics;
use jobspec::{Lang, validate_spec, validate_toml};

const TINY: &str = include_str!("../specs/tiny-train-stories260k.toml");

const PRETRAIN: &str = r#"name = "p"
task = "pretrain"
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

/// The errors and warnings of a spec as `path: message` (English), each with its Chinese text;
/// checks that the spec is valid exactly when there is no error.
fn findings(src: &str) -> Vec<String> {
    let (valid, diags) = validate_toml(src);
    let found: Vec<&jobspec::Diagnostic> = diags
        .iter()
        .filter(|d| d.severity != jobspec::Severity::Info)
        .collect();
    for d in &found {
        assert!(!d.message.get(Lang::Zh).is_empty(), "{d:?}");
    }
    assert_eq!(
        valid.is_some(),
        !found.iter().any(|d| d.is_error()),
        "{found:#?}"
    );
    found
        .iter()
        .map(|d| format!("{} {}: {}", d.severity.as_str(), d.path, d.message.en))
        .collect()
}

#[test]
fn tiny_train_runs_on_the_cpu_runner_only() {
    let on_gpu = TINY
        .replace("backend = \"runner\"", "backend = \"slurm\"")
        .replace("card = \"cpu\"", "card = \"a100-80g\"");
    assert_eq!(
        findings(&on_gpu),
        [
            "error resources.card: task = \"tiny-train\" trains on the CPU runner only (card = \"cpu\"), not on a GPU (A100 80GB)"
        ]
    );
    assert!(findings(TINY).is_empty());
}

#[test]
fn tiny_train_refuses_accumulation_and_says_its_schedule_is_its_own() {
    let accumulating = TINY.replace("grad_accum = 1", "grad_accum = 4");
    assert_eq!(
        findings(&accumulating),
        [
            "error train.grad_accum: tiny-train takes one micro-batch a step and does not accumulate gradients: `train.grad_accum` = 4 would not run; set it to 1 and raise `train.micro_batch` instead"
        ]
    );
    let constant = TINY.replace("warmup = 10", "warmup = 10\nschedule = \"constant\"");
    assert_eq!(
        findings(&constant),
        [
            "warning train.schedule: tiny-train runs warmup then cosine decay: `train.schedule = \"constant\"` is ignored"
        ]
    );
}

#[test]
fn a_custom_model_needs_an_even_head_dimension() {
    let custom = |hidden: u32, heads: u32| {
        PRETRAIN.replace(
            "model = \"qwen2.5-7b\"\n",
            &format!(
                "[model]\nlayers = 2\nhidden = {hidden}\nheads = {heads}\nkv_heads = {heads}\nffn = 32\nvocab = 512\n"
            ),
        )
    };
    assert_eq!(
        findings(&custom(12, 4)),
        [
            "error model.heads: hidden / heads = 12 / 4 = 3 is each head's dimension, which must be even (RoPE rotates its dimensions in pairs)"
        ]
    );
    assert_eq!(findings(&custom(8, 8)).len(), 1);
    assert!(findings(&custom(16, 4)).is_empty());
    // hidden = 10 with 4 heads is refused for not dividing, and only for that.
    assert_eq!(findings(&custom(10, 4)).len(), 1);
}

#[test]
fn a_learning_rate_must_be_above_zero() {
    for lr in ["0", "0.0", "-0.0"] {
        let spec = TINY.replace("lr = 1e-3", &format!("lr = {lr}"));
        let found = findings(&spec);
        assert_eq!(found.len(), 1, "{lr}: {found:?}");
        assert!(
            found[0].contains("out of range (more than 0, at most 10)"),
            "{lr}: {found:?}"
        );
    }
    assert!(findings(&TINY.replace("lr = 1e-3", "lr = 1e-9")).is_empty());
    // A spec built in code is held to the same range.
    let mut spec = validate_toml(TINY).0.unwrap().spec().clone();
    spec.train.lr = 0.0;
    let (valid, diags) = validate_spec(spec);
    assert!(valid.is_none());
    assert!(
        diags
            .iter()
            .any(|d| d.path == "train.lr" && d.message.en.contains("more than 0")),
        "{diags:?}"
    );
}

#[test]
fn a_name_is_counted_in_characters() {
    let named =
        |n: usize| PRETRAIN.replace("name = \"p\"", &format!("name = \"{}\"", "大".repeat(n)));
    assert!(findings(&named(128)).is_empty());
    assert_eq!(
        findings(&named(129)),
        ["error name: `name` must be 1 to 128 characters"]
    );
}

#[test]
fn a_time_limit_is_one_a_backend_runs() {
    let limit = |spec: &str, from: &str, to: &str| {
        findings(&spec.replace(
            &format!("time_limit = \"{from}\""),
            &format!("time_limit = \"{to}\""),
        ))
    };
    assert!(limit(PRETRAIN, "2h", "365d").is_empty());
    assert_eq!(
        limit(PRETRAIN, "2h", "365d 1s"),
        [
            "error resources.time_limit: time_limit \"365d 1s\" is too long: no backend runs a job for more than 365 days (\"365d\")"
        ]
    );
    // Slurm's own days form, as `#SBATCH --time` writes it.
    assert!(limit(PRETRAIN, "2h", "2-00:00:00").is_empty());
    assert!(limit(PRETRAIN, "2h", "1-12").is_empty());
    // The local runner runs a job for a week at most.
    assert!(limit(TINY, "30m", "7d").is_empty());
    assert_eq!(
        limit(TINY, "30m", "8d"),
        [
            "error resources.time_limit: time_limit \"8d\" is too long: backend = \"runner\" runs a job for at most 7 days (\"7d\")"
        ]
    );
    assert_eq!(limit(PRETRAIN, "2h", "213503982334601d").len(), 1);
}

/// No text a spec holds (a key, a word, a value) reaches a printed diagnostic as a control
/// character: it cannot clear the terminal, hide a link, or print a line that looks like the
/// validator's own.
#[test]
fn user_text_cannot_break_or_forge_a_diagnostic_line() {
    let spec = PRETRAIN
        .replace(
            "task = \"pretrain\"",
            "task = \"x\\u001b[2J\\u001b[1;1Hall good\\nspec.toml:1:1: info[ok]: spec is valid\"",
        )
        .replace(
            "[data]",
            "\"\\u001b]8;;http://evil\\u0007click\\u001b]8;;\\u0007\" = 1\n[data]",
        );
    let (valid, diags) = validate_toml(&spec);
    assert!(valid.is_none());
    for lang in [Lang::En, Lang::Zh] {
        let text = render_diagnostics(&diags, lang, "spec.toml");
        let helps = diags.iter().filter(|d| d.help.is_some()).count();
        assert_eq!(text.lines().count(), diags.len() + helps, "{text}");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("\\u{1b}[2J"), "{text}");
        assert!(!text.contains("\ninfo[ok]") && !text.contains("\nspec.toml:1:1: info"));
    }
}

/// Thousands of LoRA targets that are not layers of the model are refused in a few diagnostics:
/// the first ones by name, the rest as a count.
#[test]
fn thousands_of_unknown_lora_targets_make_a_few_diagnostics() {
    let targets: Vec<String> = (0..40_000).map(|i| format!("'a{i}'")).collect();
    let spec = PRETRAIN
        .replace("task = \"pretrain\"", "task = \"lora\"")
        .replace(
            "steps = 100\n",
            &format!("steps = 100\nlora_targets = [{}]\n", targets.join(",")),
        );
    let found = findings(&spec);
    assert_eq!(found.len(), 5, "{found:?}");
    assert!(
        found[4].contains("39996 more of `train.lora_targets`"),
        "{found:?}"
    );
}
