//! House rules, checked: every Rust module says what it is for, files stay a readable size, the
//! README's commands exist in the xtask, and ARCHITECTURE.md's code map names every crate and
//! every source file, and the edge's modules name each other without a cycle.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

mod module_graph;

use onramp_tests::paths::repo_root;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Rust sources of the project (not build outputs, not dependencies).
fn rust_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                let skip = name.starts_with('.')
                    || name.starts_with("target")
                    || matches!(
                        name.as_str(),
                        "node_modules" | "dist" | "build" | "fixtures"
                    );
                if !skip {
                    walk(&path, out);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo_root(), &mut out);
    out.sort();
    out
}

#[test]
fn every_module_opens_with_a_doc_comment() {
    let files = rust_files();
    assert!(files.len() > 20, "found only {} Rust files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with("#!["))
                .unwrap_or("");
            !first.starts_with("//!")
        })
        .map(|p| {
            p.strip_prefix(repo_root())
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a `//!` line: {missing:?}"
    );
}

/// STYLE.md: "a file that passes ~600 lines, or a function that passes ~80, is asking to be two".
const FILE_LINES: usize = 600;
const FN_LINES: usize = 80;

/// Functions that were longer than [`FN_LINES`] when the check began, with their length then:
/// each may shrink, none may grow, and one that fits drops off the list (the test says so).
/// (file, function, lines).
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[
    (
        "tests/tests/e2e/app_onboarding.rs",
        "first_token_plan_sign_up_redeem_submit_and_watch_the_loss_curve",
        192,
    ),
    (
        "tests/tests/e2e/app_account.rs",
        "sign_up_redeem_refused_then_redeemed_and_sign_out",
        163,
    ),
    (
        "tests/tests/e2e/cli_edge.rs",
        "the_cli_logs_in_submits_follows_lists_and_cancels",
        150,
    ),
    ("tests/tests/e2e/attack/inputs.rs", "hostile_strings", 149),
    (
        "tests/tests/e2e/edge_refunds.rs",
        "the_cron_trigger_settles_silent_jobs_and_refunds_are_bounded_by_the_capture",
        140,
    ),
    (
        "tests/tests/e2e/app_jobs.rs",
        "refusals_then_a_job_cancelled_from_its_page_and_listed",
        125,
    ),
    (
        "tests/tests/e2e/edge_trainer.rs",
        "a_lora_job_trains_through_the_edge_settles_and_its_adapter_downloads",
        123,
    ),
    (
        "tests/tests/e2e/slurm_jwt.rs",
        "the_edge_mints_its_own_slurm_tokens",
        108,
    ),
    ("tests/tests/e2e/edge_jobs.rs", "lifecycle", 104),
    ("tests/src/stack.rs", "start_once", 102),
    ("model-tiny/examples/candle_train_reference.rs", "loss", 99),
    (
        "tests/tests/e2e/slurm_backend.rs",
        "jobs_run_report_and_end_with_mapped_states_on_every_data_parser",
        96,
    ),
    ("tests/src/fake_backend.rs", "route", 95),
    ("tests/tests/e2e/attack/attack_support.rs", "races", 92),
    ("tests/tests/e2e/edge_jobs/access.rs", "experiments", 91),
    (
        "tests/tests/e2e/runner_tiny_train.rs",
        "a_tiny_train_job_trains_reports_metrics_and_writes_a_checkpoint",
        91,
    ),
    ("tests/tests/e2e/attack.rs", "stolen_tokens", 90),
    (
        "xtask/src/deploy/tests.rs",
        "a_deploy_fills_in_the_deployment_and_names_what_is_missing",
        85,
    ),
    ("model-tiny/examples/candle_train_reference.rs", "main", 83),
];

#[test]
fn no_file_is_asking_to_be_two() {
    let too_long: Vec<String> = rust_files()
        .iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .count();
            (lines > FILE_LINES).then(|| format!("{} ({lines} lines)", p.display()))
        })
        .collect();
    assert!(too_long.is_empty(), "split these: {too_long:?}");
}

/// The name of the function a line declares (`pub(crate) async fn name<T>(` → `name`).
fn declared_fn(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
        "extern \"C\" ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(['(', '<'])?;
    Some(&rest[..end])
}

/// Every function of `text` with its length in lines, from its `fn` line to its closing brace.
/// It reads code as rustfmt lays it out (`cargo xtask test` checks that): a body closes on the
/// first later line that starts with `}` at the indentation of its `fn`.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = declared_fn(line) else {
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        // A declaration without a body (a trait's) ends its signature with `;`.
        let Some(open) = lines[i..]
            .iter()
            .position(|l| l.trim_end().ends_with('{') || l.trim_end().ends_with(';'))
        else {
            continue;
        };
        if !lines[i + open].trim_end().ends_with('{') {
            continue;
        }
        let close = lines[i + open + 1..]
            .iter()
            .position(|l| l.strip_prefix(indent).is_some_and(|r| r.starts_with('}')));
        if let Some(close) = close {
            out.push((name.to_string(), open + close + 2));
        }
    }
    out
}

#[test]
fn function_lengths_are_read_as_rustfmt_lays_them_out() {
    let code = "trait T {\n    fn decl(&self) -> u8;\n    fn body(&self) {\n        let x = 1;\n    }\n}\n\
                pub(crate) async fn outer<A>(\n    a: A,\n) -> u8 {\n    if true {\n        1\n    } else {\n        2\n    }\n}\n\
                fn one() -> u8 { 1 }\n";
    assert_eq!(
        function_lengths(code),
        [("body".to_string(), 3), ("outer".to_string(), 9)]
    );
}

#[test]
fn no_function_is_asking_to_be_two() {
    let mut found: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for path in rust_files() {
        let rel = path.strip_prefix(repo_root()).unwrap_or(&path);
        let rel = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (name, lines) in function_lengths(&text) {
            let longest = found.entry((rel.clone(), name)).or_default();
            *longest = (*longest).max(lines);
        }
    }
    let mut problems = Vec::new();
    for ((file, name), &lines) in &found {
        if lines <= FN_LINES {
            continue;
        }
        match LONG_FUNCTIONS
            .iter()
            .find(|(f, n, _)| f == file && n == name)
        {
            None => problems.push(format!(
                "{file}: `{name}` has {lines} lines (at most {FN_LINES})"
            )),
            Some((_, _, was)) if lines > *was => {
                problems.push(format!("{file}: `{name}` grew from {was} to {lines} lines"))
            }
            Some(_) => {}
        }
    }
    for (file, name, was) in LONG_FUNCTIONS {
        let now = found.get(&(file.to_string(), name.to_string())).copied();
        if now.is_none_or(|lines| lines <= FN_LINES) {
            problems.push(format!(
                "{file}: `{name}` ({was} lines) is gone or fits now: take it off LONG_FUNCTIONS"
            ));
        }
    }
    assert!(problems.is_empty(), "split these: {problems:#?}");
}

#[test]
fn readme_commands_exist() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let xtask = std::fs::read_to_string(repo_root().join("xtask/src/main.rs")).unwrap();
    let mut seen = 0;
    for word in readme.split("cargo xtask ").skip(1) {
        let command: String = word
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        seen += 1;
        assert!(
            xtask.contains(&format!("\"{command}\" =>")),
            "README mentions `cargo xtask {command}`, which xtask does not have"
        );
    }
    assert!(seen >= 2, "the README must show the two commands");
    assert!(readme.contains("cargo xtask dev") && readme.contains("cargo xtask test"));
    let ci = std::fs::read_to_string(repo_root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("cargo xtask test"),
        ".ci/run must call cargo xtask test"
    );
}

#[test]
fn architecture_names_every_crate() {
    let arch = std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap();
    let cargo = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let members = cargo
        .split("members = [")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        if member.is_empty() {
            continue;
        }
        assert!(
            arch.contains(&format!("### `{member}/`")),
            "ARCHITECTURE.md has no code-map section for {member}/"
        );
    }
}

/// The code map's sections: the folder of each `### \`folder/\`` heading, with the section's text.
fn code_map_sections(arch: &str) -> Vec<(String, String)> {
    arch.split("\n### `")
        .skip(1)
        .filter_map(|section| {
            let (folder, _) = section.split_once('`')?;
            let text = section.split("\n## ").next().unwrap_or(section);
            Some((folder.to_string(), format!("`{text}")))
        })
        .collect()
}

/// Whether `text` names `name` as a word of its own (`api.rs` is not named by `runner_api.rs`).
fn names(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        !text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Whether a `` `prefix_*` `` pattern of `text` covers the file name `name` (`app_*` covers
/// `app_jobs.rs`).
fn globbed(text: &str, name: &str) -> bool {
    text.split('`').skip(1).step_by(2).any(|word| {
        let word = word.rsplit('/').next().unwrap_or(word);
        word.strip_suffix('*')
            .is_some_and(|prefix| !prefix.is_empty() && name.starts_with(prefix))
    })
}

#[test]
fn architecture_names_every_source_file() {
    let arch = std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap();
    let sections = code_map_sections(&arch);
    assert!(sections.len() > 5, "no code map in ARCHITECTURE.md");
    let mut unnamed = Vec::new();
    for path in rust_files() {
        let rel = path.strip_prefix(repo_root()).unwrap_or(&path);
        let rel = rel.to_string_lossy().replace('\\', "/");
        // The most specific section whose folder holds the file (`app/worker/` before `app/`).
        let Some((folder, text)) = sections
            .iter()
            .filter(|(folder, _)| rel.starts_with(folder.as_str()))
            .max_by_key(|(folder, _)| folder.len())
        else {
            unnamed.push(format!("{rel} (no section)"));
            continue;
        };
        let inner = &rel[folder.len()..];
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        let named = match name {
            // A crate's root is what its section is about.
            "lib.rs" | "main.rs" if inner == format!("src/{name}") => true,
            // A folder module is named by its folder.
            "mod.rs" | "main.rs" => {
                let dir = rel.rsplit('/').nth(1).unwrap_or("");
                names(text, &format!("{dir}/"))
            }
            _ => names(text, name) || globbed(text, name),
        };
        if !named {
            unnamed.push(rel);
        }
    }
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md's code map does not name these files in their crate's section \
         (by file name, folder for mod.rs, or a `prefix_*` pattern): {unnamed:#?}"
    );
}

/// The source folders of every crate, each checked as one module graph.
const CRATE_SOURCES: &[&str] = &[
    "jobspec/src",
    "api/src",
    "model-tiny/src",
    "app/src",
    "app/worker/src",
    "edge/src",
    "runner/src",
    "cli/src",
    "tests/src",
    "xtask/src",
];

/// No crate's modules name each other both ways: a helper two modules share lives in a module
/// below both, never in one of them (a cycle through `use super::…` is how a layer stops being
/// one). Test modules count too: they are the modules' own code. Prints each crate's count of
/// tangles (groups of modules that all reach each other) and fails naming them.
#[test]
fn no_crate_has_an_import_cycle() {
    let mut found = Vec::new();
    for dir in CRATE_SOURCES {
        let src = repo_root().join(dir);
        let files: Vec<(String, String)> = rust_files()
            .iter()
            .filter_map(|p| {
                let rel = p
                    .strip_prefix(&src)
                    .ok()?
                    .to_string_lossy()
                    .replace('\\', "/");
                Some((rel, std::fs::read_to_string(p).unwrap()))
            })
            .collect();
        assert!(!files.is_empty(), "no sources in {dir}");
        let graph = module_graph::graph(&files);
        let tangles = module_graph::tangles(&graph);
        eprintln!("{dir}: {} tangle(s)", tangles.len());
        for t in tangles {
            let names: Vec<String> = t.iter().map(|m| m.join("::")).collect();
            found.push(format!("{dir}: {}", names.join(" ↔ ")));
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

/// The check can fail: a crate whose `a` names `b` (`use crate::b::{self, X}`) and whose
/// `a::leaf` names `b` (`super::super::b::g()`), to which `b` names back in each way a path can
/// be written; and a parent that names its child (`leaf::f()`) when the child names its parent
/// (`super::X`).
#[test]
fn the_module_graph_sees_cycles_through_every_kind_of_path() {
    let files = |b: &str, leaf: &str| {
        [
            ("lib.rs", "//! c\nmod a;\nmod b;\n"),
            (
                "a/mod.rs",
                "//! a\nmod leaf;\nuse crate::b::{self, X};\nfn h() {\n    leaf::f();\n}\n",
            ),
            ("a/leaf.rs", leaf),
            ("b.rs", b),
        ]
        .map(|(f, t)| (f.to_string(), t.to_string()))
    };
    // The modules on the cycle found, if any.
    let cycle = |b: &str, leaf: &str| {
        let found = module_graph::cycle(&module_graph::graph(&files(b, leaf)));
        found.map(|c| c.iter().map(|m| m.join("::")).collect::<BTreeSet<_>>())
    };
    let on = |names: &[&str]| Some(names.iter().map(|n| n.to_string()).collect());
    let leaf = "//! l\nfn f() -> u8 {\n    super::super::b::g()\n}\n";
    // Comments, strings and a test module's `super` name nothing outside their file.
    let clean = "//! b \"a::x\"\n// use crate::a;\nconst S: &str = \"crate::a::leaf\";\n\
                 const R: &str = r#\"super::a\"#;\nconst C: char = '\"';\n\
                 #[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    assert_eq!(cycle(clean, leaf), None);
    for back in [
        "use super::a::leaf;\n",
        "use crate::{a::{leaf as l}, c};\n",
        "fn g() -> u8 {\n    crate::a::leaf::f()\n}\n",
    ] {
        assert_eq!(cycle(back, leaf), on(&["a::leaf", "b"]), "{back}");
    }
    let up = "//! l\nuse super::X;\n";
    assert_eq!(cycle(clean, up), on(&["a", "a::leaf"]));
    let tangles = module_graph::tangles(&module_graph::graph(&files(clean, up)));
    assert_eq!(
        tangles,
        vec![vec![vec!["a".to_string()], vec!["a".into(), "leaf".into()]]]
    );
    // The root's re-exports: `crate::X` names the module `X` is in, not the root.
    let reexported = [
        (
            "lib.rs",
            "//! c\nmod a;\nmod b;\npub use b::{\n    X,\n};\nfn f() {\n    a::g();\n}\n",
        ),
        ("a.rs", "//! a\nuse crate::X;\n"),
        ("b.rs", "//! b\n"),
    ]
    .map(|(f, t)| (f.to_string(), t.to_string()));
    let g = module_graph::graph(&reexported);
    assert_eq!(module_graph::tangles(&g), Vec::<Vec<Vec<String>>>::new());
    assert!(
        g[&vec!["a".to_string()]].contains(&vec!["b".to_string()]),
        "{g:?}"
    );
}
