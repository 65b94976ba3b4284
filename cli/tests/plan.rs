//! `onramp plan` end to end: the real binary on the spec corpus.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn onramp(args: &[&str]) -> (i32, String) {
    let (code, out, _) = onramp_in(None, args);
    (code, out)
}

/// `onramp ARGS` with `LANG` set to `lang` (and no other locale variable), in the spec corpus:
/// the exit code, stdout and stderr.
fn onramp_in(lang: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_onramp"));
    cmd.args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../jobspec/specs"))
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env_remove("LANG");
    if let Some(l) = lang {
        cmd.env("LANG", l);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn json_has_the_promised_shape() {
    let (code, out) = onramp(&["plan", "deepseek-7b-128k-mxc500.toml", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "diagnostics",
        "parameters",
        "memory",
        "time",
        "cost",
        "cards",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in ["total", "trainable", "largest_layer"] {
        assert!(v["parameters"][key].is_u64(), "parameters.{key}");
    }
    for key in [
        "params_bytes",
        "grads_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "buffers_bytes",
        "model_states_bytes",
        "total_bytes",
    ] {
        assert!(v["memory"]["per_gpu"][key].is_u64(), "memory.per_gpu.{key}");
    }
    assert!(v["memory"]["card_bytes"].is_u64());
    assert!(v["memory"]["fits"].is_boolean());
    for key in ["flops", "seconds", "mfu"] {
        assert!(v["time"][key].is_number(), "time.{key}");
    }
    assert!(v["cost"]["card_hours"].is_number());
    assert!(v["cost"]["fen"].is_u64());
    assert_eq!(v["cards"].as_array().unwrap().len(), 9);
    let d = &v["diagnostics"][0];
    for key in ["severity", "code", "message", "line", "column"] {
        assert!(d.get(key).is_some(), "diagnostics[0].{key}");
    }
}

#[test]
fn errors_exit_non_zero() {
    let (code, out) = onramp(&["plan", "errors-typos.toml"]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with("errors-typos.toml:4:8: error[bad-value]"),
        "{out}"
    );
    let (code, _) = onramp(&["plan", "7b-full-4090.toml", "--json"]);
    assert_eq!(code, 1, "does not fit is an error");
    let (code, _) = onramp(&["plan", "seed-claim-1.2t-30h.toml"]);
    assert_eq!(code, 1, "physically impossible is an error");
    let (code, _) = onramp(&[]);
    assert_eq!(code, 2);
}

/// A file that cannot be read is one clear line and exit 3, not a usage error.
#[test]
fn unreadable_files_are_io_errors_not_usage_errors() {
    for args in [
        &["plan", "no-such-file.toml"][..],
        &["ds-check", "no-such-file.json"],
    ] {
        let (code, out, err) = onramp_in(None, args);
        assert_eq!(code, 3, "{args:?}: {err}");
        assert_eq!(out, "");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("onramp: cannot read no-such-file."),
            "{err}"
        );
    }
    // A usage error names the mistake and how to get help, without the whole manual.
    let (code, _, err) = onramp_in(None, &["plan", "x.toml", "--frob"]);
    assert_eq!(code, 2);
    assert!(err.contains("--frob") && err.contains("--help"), "{err}");
    assert!(err.lines().count() < 8, "{err}");
    let (code, _, err) = onramp_in(None, &["templates", "no-such-template"]);
    assert_eq!(code, 2, "{err}");
}

/// `--help` and `-h` on every command print help on stdout and exit 0; `--version` too.
#[test]
fn help_and_version_on_every_command() {
    let commands = [
        "plan",
        "ds-check",
        "schema",
        "templates",
        "login",
        "logout",
        "me",
        "submit",
        "jobs",
        "status",
        "logs",
        "cancel",
        "completions",
    ];
    for flag in ["--help", "-h"] {
        let (code, out, _) = onramp_in(None, &[flag]);
        assert_eq!(code, 0);
        for c in commands {
            assert!(out.contains(&format!("  {c} ")), "{c} missing from\n{out}");
        }
        for c in commands {
            let (code, out, err) = onramp_in(None, &[c, flag]);
            assert_eq!(code, 0, "{c} {flag}: {err}");
            assert!(out.contains(&format!("Usage: onramp {c}")), "{c}: {out}");
        }
    }
    let (code, _, _) = onramp_in(None, &["help", "plan"]);
    assert_eq!(code, 0);
    let (code, out, _) = onramp_in(None, &["--version"]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("onramp {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn plan_help_snapshot() {
    let (_, out, _) = onramp_in(None, &["plan", "-h"]);
    expect_test::expect![[r#"
        Diagnostics, memory per card, time and cost on every card type, fixes and launch artifacts

        Usage: onramp plan [OPTIONS] <SPEC>

        Arguments:
          <SPEC>  The job spec (TOML, or JSON when it ends in .json), or - for stdin

        Options:
              --json              The plan as JSON (the same shape the app reads)
              --lang <LANG>       Language of the output: en or zh (else LC_ALL, LC_MESSAGES or LANG starting with zh) [possible values: en, zh]
              --no-artifacts      Leave out the DeepSpeed JSON, the launch commands and the sbatch script
              --artifacts         Print the launch artifacts even when the spec has errors (by default only a plan without errors shows them)
              --fix <N>           Apply fix N (numbered as the plan lists them) to the spec, keeping its comments, and show the new plan
              --deepspeed <FILE>  Carry a DeepSpeed config (ds_config.json) into the spec: its batch, precision, ZeRO, offload, optimizer and schedule, "auto" left to the spec; lists what the job will not run as written
          -o, --output <OUT>      With --fix or --deepspeed: write the patched spec here instead of over SPEC (- for stdout)
              --explain           Add the formula and assumptions behind every figure
              --trainer-run       Print the run onramp-train reads (onramp-run.json, its ds_config in it) instead of the plan
          -h, --help              Print help (see more with '--help')
    "#]].assert_eq(&out);
}

/// Completions for the shells people use, naming the commands and their options.
#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, err) = onramp_in(None, &["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        // fish writes options without their dashes (`-l no-artifacts`).
        for word in ["plan", "submit", "no-artifacts", "follow", "lang"] {
            assert!(out.contains(word), "{shell} completions lack {word}");
        }
    }
    let (code, _, _) = onramp_in(None, &["completions", "tcsh"]);
    assert_eq!(code, 2);
}

/// One locale rule for every command: `--lang`, else LC_ALL / LC_MESSAGES / LANG.
#[test]
fn plan_follows_the_locale_and_the_flag_wins() {
    let args = ["plan", "7b-lora-4090.toml", "--no-artifacts"];
    let (code, zh, _) = onramp_in(Some("zh_CN.UTF-8"), &args);
    assert_eq!(code, 0);
    assert!(zh.contains("各卡型对比："), "{zh}");
    let (_, en, _) = onramp_in(
        Some("zh_CN.UTF-8"),
        &[&args[..], &["--lang", "en"]].concat(),
    );
    assert!(en.contains("on every card type:"), "{en}");
    let (_, en, _) = onramp_in(Some("en_US.UTF-8"), &args);
    assert!(en.contains("on every card type:"), "{en}");
    let (_, zh, _) = onramp_in(None, &["--lang", "zh", "templates"]);
    assert!(
        zh.contains('（') || zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
        "{zh}"
    );
}

/// The whole terminal report in both languages, as a user sees it.
#[test]
fn plan_report_snapshots_in_both_languages() {
    let (code, en, _) = onramp_in(
        Some("en_US.UTF-8"),
        &["plan", "7b-full-4090.toml", "--no-artifacts"],
    );
    assert_eq!(code, 1, "does not fit");
    expect_test::expect_file!["snapshots/plan-7b-full-4090.en.txt"].assert_eq(&en);
    let (code, zh, _) = onramp_in(
        Some("zh_CN.UTF-8"),
        &["plan", "7b-full-4090.toml", "--no-artifacts", "--explain"],
    );
    assert_eq!(code, 1);
    expect_test::expect_file!["snapshots/plan-7b-full-4090.zh.txt"].assert_eq(&zh);
}

#[test]
fn text_report_in_chinese() {
    let (code, out) = onramp(&[
        "plan",
        "7b-lora-4090.toml",
        "--lang",
        "zh",
        "--no-artifacts",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("每卡显存"), "{out}");
    assert!(out.contains("放得下"), "{out}");
    assert!(!out.contains("#SBATCH"));
}

#[test]
fn full_report_has_artifacts() {
    let (code, out) = onramp(&["plan", "7b-sft-zero3-8xa100.toml"]);
    assert_eq!(code, 0);
    for needle in [
        "ds_config.json:",
        "deepspeed --num_gpus 8",
        "torchrun",
        "#SBATCH --gres=gpu:8",
        "srun --ntasks-per-node=1 ${SLURM_CPUS_PER_TASK:+--cpus-per-task=\"$SLURM_CPUS_PER_TASK\"} torchrun",
        "#SBATCH --requeue",
    ] {
        assert!(out.contains(needle), "missing {needle}");
    }
}

#[test]
fn templates_and_schema() {
    let (code, out) = onramp(&["templates"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 4);
    // A printed template names the edge's schema, from --edge or ONRAMP_EDGE.
    let (code, out) = onramp(&[
        "templates",
        "7b-lora-4090",
        "--edge",
        "https://onramp.example/",
    ]);
    assert_eq!(code, 0);
    let (first, rest) = out.split_once('\n').unwrap();
    assert_eq!(
        first,
        "#:schema https://onramp.example/schema/jobspec.schema.json"
    );
    let template = jobspec::templates::template("7b-lora-4090").unwrap().toml;
    assert_eq!(Some(rest), template.split_once('\n').map(|x| x.1));
    let out = Command::new(env!("CARGO_BIN_EXE_onramp"))
        .args(["templates", "tiny-train-stories260k"])
        .env("ONRAMP_EDGE", "http://10.0.0.7:8787")
        .output()
        .unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(out.starts_with("#:schema http://10.0.0.7:8787/schema/jobspec.schema.json\n"));
    let (code, out) = onramp(&["schema"]);
    assert_eq!(code, 0);
    let schema: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(schema["properties"]["train"].is_object());
}

/// The help speaks the run's language: `--lang zh` or a Chinese locale gives Chinese help
/// (exit 0), an English locale the English one.
#[test]
fn help_in_both_languages() {
    let (code, out, _) = onramp_in(None, &["--lang", "zh", "plan", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("用法：onramp plan [OPTIONS] <SPEC>"), "{out}");
    assert!(out.contains("附上每个数字背后的公式与假设"), "{out}");
    assert!(!out.contains("Add the formula"), "{out}");
    let (code, out, _) = onramp_in(Some("zh_CN.UTF-8"), &["-h"]);
    assert_eq!(code, 0);
    assert!(out.contains("离线规划 GPU 训练作业"), "{out}");
    let (code, out, _) = onramp_in(Some("zh_CN.UTF-8"), &["--lang=en", "logs", "-h"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("Keep polling until the job has ended"),
        "{out}"
    );
    // Given twice, the last --lang counts, for the help and for the output alike.
    let (code, out, err) = onramp_in(None, &["--lang", "en", "templates", "--lang", "zh"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("单张 RTX 4090"), "{out}");
    let (code, out, _) = onramp_in(None, &["--lang=zh", "plan", "--lang", "en", "-h"]);
    assert_eq!(code, 0);
    assert!(out.contains("Diagnostics, memory per card"), "{out}");
    let (code, out, _) = onramp_in(Some("en_US.UTF-8"), &["cancel", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Cancel a job; its hold settles"), "{out}");
}

/// `onramp plan --trainer-run`: the run onramp-train reads, jobspec's own, for a spec by hand; a
/// spec with errors says them (on stderr, nothing on stdout), and tiny-train has no such run.
#[test]
fn trainer_run_prints_the_run_the_trainer_reads() {
    let (code, out, err) = onramp_in(None, &["plan", "7b-lora-4090.toml", "--trainer-run"]);
    assert_eq!(code, 0, "{err}");
    let src = include_str!("../../jobspec/specs/7b-lora-4090.toml");
    let (v, _) = jobspec::validate_toml(src);
    assert_eq!(out, jobspec::trainer::run_json(&v.unwrap()));
    let run: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(run["version"], jobspec::trainer::RUN_VERSION);
    assert_eq!(run["plan"]["lora"]["r"], 16);

    let (code, out, err) = onramp_in(None, &["plan", "errors-typos.toml", "--trainer-run"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("error"), "{err}");
    let (code, out, err) = onramp_in(
        None,
        &["plan", "tiny-train-stories260k.toml", "--trainer-run"],
    );
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("tiny-train"), "{err}");
    let (code, _, err) = onramp_in(
        Some("zh_CN.UTF-8"),
        &["plan", "tiny-train-stories260k.toml", "--trainer-run"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("没有训练运行文件"), "{err}");
    let (code, _, err) = onramp_in(
        None,
        &["plan", "7b-lora-4090.toml", "--trainer-run", "--json"],
    );
    assert_eq!(code, 2, "the flags conflict: {err}");
}

/// `--fix N -o OUT` writes the spec with fix N applied, comments and all, and the new spec
/// plans without that error; a number the plan does not list is a usage error that writes
/// nothing; the fixes print as TOML under their tables.
#[test]
fn fix_writes_the_patched_spec_keeping_comments() {
    let dir = std::env::temp_dir().join(format!("onramp-fix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("spec.toml");
    let original = include_str!("../../jobspec/specs/7b-full-4090.toml");
    std::fs::write(&spec, original).unwrap();
    let out = dir.join("fixed.toml");
    let (code, text) = onramp(&["plan", "--no-artifacts", spec.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("  1. ") && text.contains("      [train]\n"),
        "{text}"
    );
    assert!(!text.contains("train.micro_batch = "), "{text}");
    let (code, text) = onramp(&[
        "plan",
        spec.to_str().unwrap(),
        "--fix",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.starts_with("applied fix 1 to "), "{text}");
    let fixed = std::fs::read_to_string(&out).unwrap();
    assert!(
        fixed.contains("# A 7B full fine-tune on one RTX 4090"),
        "{fixed}"
    );
    assert_ne!(fixed, original);
    assert_eq!(
        std::fs::read_to_string(&spec).unwrap(),
        original,
        "SPEC untouched with -o"
    );
    let (code, again) = onramp(&["plan", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{again}");
    // Without -o the spec itself is rewritten.
    let (code, _) = onramp(&["plan", spec.to_str().unwrap(), "--fix", "2"]);
    assert_eq!(code, 0);
    assert_ne!(std::fs::read_to_string(&spec).unwrap(), original);
    let (code, _, err) = onramp_in(None, &["plan", out.to_str().unwrap(), "--fix", "1"]);
    assert_eq!(code, 2, "a spec that fits has no fixes: {err}");
    assert!(err.contains("lists no fixes"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plan with errors leaves the launch artifacts out unless asked for.
#[test]
fn artifacts_only_on_request_when_the_spec_does_not_fit() {
    let (code, text) = onramp(&["plan", "7b-full-4090.toml"]);
    assert_eq!(code, 1);
    assert!(
        !text.contains("ds_config.json:") && text.contains("--artifacts"),
        "{text}"
    );
    let (_, text) = onramp(&["plan", "7b-full-4090.toml", "--artifacts"]);
    assert!(
        text.contains("ds_config.json:") && text.contains("sbatch:"),
        "{text}"
    );
    let (code, text) = onramp(&["plan", "7b-lora-4090.toml"]);
    assert_eq!(code, 0);
    assert!(text.contains("ds_config.json:"), "{text}");
}

/// `--deepspeed FILE -o OUT`: a user's ds_config (transformers' ZeRO-3, "auto" values, a
/// misspelt key) carried into the spec, comments kept, with what the job will not run as
/// written listed in either language; a config DeepSpeed refuses writes nothing. `ds-check`
/// says the same in words, not debug values.
#[test]
fn deepspeed_import_writes_the_spec_and_says_what_is_not_carried() {
    let dir = std::env::temp_dir().join(format!("onramp-ds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (spec, cfg, out) = (
        dir.join("spec.toml"),
        dir.join("ds.json"),
        dir.join("out.toml"),
    );
    let original = include_str!("../../jobspec/specs/7b-lora-4090.toml");
    std::fs::write(&spec, original).unwrap();
    std::fs::write(
        &cfg,
        r#"{"bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
    "stage3_max_live_parameters": 1e9, "reduce_bucket_size": "auto"},
  "train_micro_batch_size_per_gpu": "auto", "steps_per_print": 2000,
  "wall_clock_breakdwn": false}"#,
    )
    .unwrap();
    let [spec_s, cfg_s, out_s] = [&spec, &cfg, &out].map(|p| p.to_str().unwrap().to_string());
    let args = ["plan", &spec_s, "--deepspeed", &cfg_s, "-o", &out_s];
    let (code, text, err) = onramp_in(None, &args);
    assert_eq!(code, 0, "{text}{err}");
    assert!(
        text.starts_with(&format!("imported {cfg_s} into {out_s}")),
        "{text}"
    );
    assert!(
        err.contains(&format!("{cfg_s}:5:3: warning[unknown-key]"))
            && err.contains("    help: did you mean `wall_clock_breakdown`?")
            && err.contains("info[not-carried]: `steps_per_print` = 2000 is not carried"),
        "{err}"
    );
    assert!(
        !err.contains("stage3_max_live_parameters"),
        "DeepSpeed's default: {err}"
    );
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(
        written.contains("# Template: LoRA fine-tuning"),
        "{written}"
    );
    assert!(written.contains("zero_stage = 3") && written.contains("offload_optimizer = \"cpu\""));
    assert_eq!(std::fs::read_to_string(&spec).unwrap(), original);
    let (code, _, err) = onramp_in(Some("zh_CN.UTF-8"), &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("未被采用") && err.contains("建议："), "{err}");

    // DeepSpeed would refuse it: nothing is written.
    std::fs::remove_file(&out).unwrap();
    std::fs::write(
        &cfg,
        r#"{"fp16": {"enabled": true}, "bf16": {"enabled": true}}"#,
    )
    .unwrap();
    let (code, _, err) = onramp_in(None, &args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error[conflict]") && err.contains("was not imported"),
        "{err}"
    );
    assert!(!out.exists());
    let (code, text, _) = onramp_in(None, &["ds-check", &cfg_s]);
    assert_eq!(code, 1, "{text}");
    let (code, _, err) = onramp_in(None, &["plan", &spec_s, "-o", &out_s]);
    assert_eq!(code, 2, "-o needs --fix or --deepspeed: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ds-check` says what a config leaves to the spec as "auto", in either language.
#[test]
fn ds_check_says_auto_in_words() {
    let dir = std::env::temp_dir().join(format!("onramp-ds-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("ds.json");
    let cfg_s = cfg.to_str().unwrap();
    std::fs::write(
        &cfg,
        r#"{"train_batch_size": 32, "bf16": {"enabled": true}}"#,
    )
    .unwrap();
    let (code, text, _) = onramp_in(None, &["ds-check", cfg_s]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        text,
        "ok: train_batch_size 32, micro batch auto, accumulation auto, precision bf16, ZeRO-0, offload optimizer none, params none\n"
    );
    let (_, text, _) = onramp_in(Some("zh_CN.UTF-8"), &["ds-check", cfg_s]);
    assert!(
        text.starts_with("通过：train_batch_size 32，micro batch auto"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `onramp datasets check` works offline and answers in its exit code: 0 for a file whose every
/// line is usable, 1 when any line is bad (the bad line listed with its number), 3 for a file it
/// cannot read.
#[test]
fn datasets_check_exits_1_on_a_bad_line() {
    let dir = std::env::temp_dir().join(format!("onramp-dscheck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.jsonl");
    let bad = dir.join("bad.jsonl");
    let line = r#"{"prompt": "2 + 2 =", "completion": " 4"}"#;
    std::fs::write(&good, format!("{line}\n{line}\n")).unwrap();
    std::fs::write(
        &bad,
        format!("{line}\n{{\"prompt\": 3, \"completion\": \"x\"}}\n"),
    )
    .unwrap();
    let check = |file: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_onramp"))
            .args(["datasets", "check", file.to_str().unwrap(), "--json"])
            // Offline: an edge that does not answer is never asked.
            .env("ONRAMP_EDGE", "http://127.0.0.1:9")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (code, out) = check(&good);
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(&bad);
    assert_eq!(code, 1, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["bad"][0]["line"], 2, "{report}");
    let (code, _) = check(&dir.join("no-such-file.jsonl"));
    assert_eq!(code, 3);
    std::fs::remove_dir_all(&dir).unwrap();
}
