//! Every message the CLI prints in a Chinese run is Chinese: the plan of every spec in the
//! corpus (with `--explain`), `ds-check` and a DeepSpeed import, the templates, every kind of
//! usage error, unreadable files, a fix that does not exist, and an edge that cannot be reached.
//! What stays as written is what the user typed or the program names: keys, ids, values, paths,
//! code, the TOML of a fix.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use std::process::Command;

/// `onramp --lang zh ARGS` in the spec corpus: stdout and stderr together.
fn zh(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_onramp"))
        .arg("--lang")
        .arg("zh")
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../jobspec/specs"))
        .env_remove("ONRAMP_EDGE")
        .env_remove("ONRAMP_TOKEN")
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap()
}

/// English words no Chinese sentence has (a key, an id or a value is one token with its
/// `_`, `-`, `.` or digits, and is not looked at).
const ENGLISH: &[&str] = &[
    "the",
    "and",
    "not",
    "cannot",
    "years",
    "per",
    "with",
    "of",
    "is",
    "are",
    "for",
    "to",
    "error",
    "warning",
    "help",
    "info",
    "found",
    "missing",
    "unknown",
    "invalid",
    "required",
    "provided",
    "possible",
    "values",
    "usage",
    "more",
    "information",
    "try",
    "no",
    "template",
    "read",
    "file",
    "such",
    "directory",
    "fits",
    "does",
    "fit",
    "applied",
    "imported",
    "lists",
    "fixes",
];

/// The English words of a line, outside what it quotes (`…`, "…", '…').
fn english_words(line: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut quote = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, '`' | '"' | '\'') => quote = Some(c),
            None => plain.push(c),
        }
    }
    plain
        .split(|c: char| !(c.is_ascii_alphanumeric() || "_-./:".contains(c)))
        .filter(|w| w.chars().all(|c| c.is_ascii_alphabetic()))
        .map(str::to_ascii_lowercase)
        .filter(|w| ENGLISH.contains(&w.as_str()))
        .collect()
}

fn assert_chinese(what: &str, out: &str) {
    // The TOML of a fix or a patched spec, as it pastes, is the spec's own language.
    for line in out.lines().filter(|l| !is_toml(l)) {
        let words = english_words(line);
        assert!(
            words.is_empty(),
            "{what}: English {words:?} in a Chinese run:\n{line}\n--- all of it ---\n{out}"
        );
    }
}

fn is_toml(line: &str) -> bool {
    let t = line.trim();
    // A spec's own comments are its author's.
    t.starts_with('#')
        || (t.starts_with('[') && t.ends_with(']') && !t.contains(' '))
        || t.split_once(" = ").is_some_and(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.".contains(c))
        })
}

#[test]
fn every_plan_of_the_corpus_is_chinese() {
    let specs: Vec<String> =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../jobspec/specs"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
    assert!(specs.len() >= 5, "{specs:?}");
    for spec in &specs {
        assert_chinese(spec, &zh(&["plan", spec, "--explain", "--no-artifacts"]));
    }
}

#[test]
fn errors_and_the_other_offline_commands_are_chinese() {
    let dir = std::env::temp_dir().join(format!("onramp-zh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ds = dir.join("ds.json");
    std::fs::write(
        &ds,
        r#"{"train_batch_size": 7, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
            "fp16": {"enabled": true}, "bf16": {"enabled": true}, "steps_per_prnt": 5,
            "zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}}"#,
    )
    .unwrap();
    let good = dir.join("good.json");
    std::fs::write(
        &good,
        r#"{"zero_optimization": {"stage": 2, "overlap_comm": false}, "steps_per_print": 100,
            "optimizer": {"type": "Lamb"}}"#,
    )
    .unwrap();
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, include_str!("../../jobspec/specs/7b-lora-4090.toml")).unwrap();
    // A dataset with every kind of bad line (datacheck's own tests hold each kind's text).
    let data = dir.join("data.jsonl");
    std::fs::write(
        &data,
        concat!(
            "{\"instruction\": \"ok\", \"output\": \"fine\"}\n{\"instruction\": \"x\"\n[1]\n",
            "{\"instruction\": 3, \"output\": \"y\"}\n{\"instruction\": \"x\", \"output\": \"y\", \"z\": 1}\n",
            "{\"instruction\": \"x\"}\n{\"q\": 1}\n{\"instruction\": \"x\", \"output\": \" \"}\n",
            "{\"prompt\": \"x\", \"completion\": \"y\"}\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"robot\", \"content\": \"a\"}]}\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"user\", \"content\": \"a\"}]}\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}\n",
        ),
    )
    .unwrap();
    let array = dir.join("array.json");
    std::fs::write(&array, "[{\"text\": \"a\"},,\n").unwrap();
    let [ds, good, spec, data, array] =
        [&ds, &good, &spec, &data, &array].map(|p| p.to_str().unwrap().to_string());
    let cases: &[&[&str]] = &[
        &["ds-check", &ds],
        &["ds-check", &good],
        &["plan", &spec, "--deepspeed", &good, "-o", "-"],
        &["plan", &spec, "--deepspeed", &ds],
        &["templates"],
        &["plan"],
        &["plan", "x.toml", "--frob"],
        &["completions", "tcsh"],
        &["templates", "no-such-template"],
        &["status", "a/b"],
        &["plan", "no-such-file.toml"],
        &["ds-check", "no-such-file.json"],
        &["datasets", "check", &data],
        &[
            "datasets",
            "check",
            &data,
            "--model",
            "qwen2.5-7b",
            "--seq-len",
            "4",
        ],
        &["datasets", "check", &array],
        &["datasets", "check", "no-such-file.jsonl"],
        &["datasets", "check", &data, "--model", "no-such-model"],
        &["datasets", "check", &data, "--tokenizer", "/no/such/dir"],
        &["plan", "7b-full-4090.toml", "--fix", "99"],
        &["plan", "7b-lora-4090.toml", "--fix", "1"],
        &["plan", "tiny-train-stories260k.toml", "--trainer-run"],
        &["plan", "errors-typos.toml", "--trainer-run"],
        &["me", "--edge", "http://127.0.0.1:9"],
        &["jobs", "--edge", "http://127.0.0.1:9"],
    ];
    for args in cases {
        assert_chinese(&args.join(" "), &zh(args));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_check_finds_english() {
    assert_eq!(english_words("错误：cannot read `x`"), ["cannot", "read"]);
    assert!(english_words("错误：未知的键 `the_key`，\"not this\"").is_empty());
    assert!(is_toml("      micro_batch = 1") && is_toml("  [train]"));
}
