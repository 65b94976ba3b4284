//! House rules, checked: every Rust module says what it is for, files stay a readable size, the
//! README's commands exist in the xtask, and ARCHITECTURE.md's code map names every crate and
//! every source file.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::paths::repo_root;
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

#[test]
fn no_file_is_asking_to_be_two() {
    // STYLE.md: "a file that passes ~600 lines is asking to be two". Test files and snapshot
    // tables get some slack; past 900 lines anything is split.
    let too_long: Vec<String> = rust_files()
        .iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .count();
            (lines > 900).then(|| format!("{} ({lines} lines)", p.display()))
        })
        .collect();
    assert!(too_long.is_empty(), "split these: {too_long:?}");
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
