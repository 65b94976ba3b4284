//! `cargo xtask test`: check the house style, set up, build, and run every test: the deploy dry
//! run on that build, host unit tests of every crate, wasm tests in headless Chromium, and the
//! stack tests (the edge under `wrangler dev`, the runner and the browser journeys). The style is
//! rustfmt, then clippy's lints with warnings as errors in every build of the workspace's crates,
//! natively and for wasm32 (`build::linted`), so that no crate is checked in a pass of its own
//! and then compiled again for the tests.

use crate::build::linted;
use crate::cmd::{cargo, path_with, repo_root};
use crate::setup::Tools;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Test counts summed over every test binary of every run, from the harnesses' closing lines.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    ignored: u64,
    /// Put before each echoed line of a run that shares the terminal with another.
    prefix: &'static str,
}

impl Tally {
    /// Runs a test command (cargo test, pytest), echoing its output and counting its `test result:` lines.
    fn run(&mut self, what: &str, cmd: &mut Command) -> Result<(), String> {
        let started = Instant::now();
        eprintln!("xtask: {what}");
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("{}{line}", self.prefix);
                self.count(&line);
            }
        }
        let status = child.wait().map_err(|e| format!("{what}: {e}"))?;
        if !status.success() {
            self.print();
            return Err(format!("{what} failed ({status})"));
        }
        eprintln!(
            "xtask: {what}: done in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Adds the counts of a tally that ran beside this one.
    fn add(&mut self, other: &Tally) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.ignored += other.ignored;
    }

    /// Counts a step that is one check of its own (not a test harness) as one test.
    fn step(&mut self, what: &str, result: Result<(), String>) -> Result<(), String> {
        match result {
            Ok(()) => {
                self.passed += 1;
                Ok(())
            }
            Err(e) => {
                self.failed += 1;
                self.print();
                Err(format!("{what}: {e}"))
            }
        }
    }

    /// Reads `test result: ok. 3 passed; 0 failed; 1 ignored; ...` (libtest and
    /// wasm-bindgen-test-runner print the same shape) and pytest's summary.
    fn count(&mut self, line: &str) {
        if self.count_pytest(line) {
            return;
        }
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(kind), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match kind {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }

    /// Reads pytest's closing line, `12 passed, 1 failed, 2 skipped in 3.45s` (maybe between
    /// `=` signs; errors count as failures). Returns whether the line was one.
    fn count_pytest(&mut self, line: &str) -> bool {
        let body = line.trim().trim_matches('=').trim();
        let Some((counts, time)) = body.rsplit_once(" in ") else {
            return false;
        };
        let time = time.split_whitespace().next().unwrap_or("");
        if !time.ends_with('s') || time.trim_end_matches('s').parse::<f64>().is_err() {
            return false;
        }
        let mut parsed = Vec::new();
        for part in counts.split(", ") {
            let mut words = part.split_whitespace();
            let (Some(n), Some(kind), None) = (words.next(), words.next(), words.next()) else {
                return false;
            };
            let Ok(n) = n.parse::<u64>() else {
                return false;
            };
            parsed.push((n, kind));
        }
        for (n, kind) in parsed {
            match kind {
                "passed" => self.passed += n,
                "failed" | "error" | "errors" => self.failed += n,
                "skipped" => self.ignored += n,
                _ => {}
            }
        }
        true
    }

    /// The closing line, in the plain form CI reads: `tests: N passed, N failed, N skipped`.
    fn print(&self) {
        println!(
            "tests: {} passed, {} failed, {} skipped",
            self.passed, self.failed, self.ignored
        );
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("`cargo xtask test` takes no arguments (got {a:?})"));
    }
    let started = Instant::now();
    let mut tally = Tally::default();
    // Formatting takes seconds: a diff fails the run before anything is installed or built.
    crate::setup::rust_components()?;
    tally.step(
        "cargo fmt --all --check",
        crate::cmd::run(
            "cargo fmt --all --check",
            cargo().args(["fmt", "--all", "--check"]),
        ),
    )?;
    let tools = crate::setup::run_then(crate::build::all)?;

    // A configuration that cannot deploy fails here, on the build the tests below use.
    tally.step(
        "cargo xtask deploy --dry-run",
        crate::deploy::dry_run_built(),
    )?;
    // The trainer's tests (CPU runs that wait on process starts and imports more than they
    // compute: a third of the machine idle when they run alone) run beside the wasm tests and
    // then the host tests (compiling, then tests of a few seconds each), one after the other on
    // this side, since two cargo builds would only wait on each other's lock.
    let cli = cli_copy()?;
    std::thread::scope(|scope| {
        let trainer = scope.spawn(|| {
            let mut t = Tally {
                prefix: "pytest| ",
                ..Tally::default()
            };
            let result = trainer_tests(&mut t, &tools, &cli);
            (t, result)
        });
        let rust = wasm_tests(&mut tally, &tools).and_then(|()| {
            tally.run(
                "host tests (cargo test --workspace; clippy's lints)",
                linted(&mut cargo()).args(["test", "--workspace"]),
            )
        });
        let (t, result) = trainer
            .join()
            .map_err(|_| "the trainer tests' thread panicked".to_string())?;
        tally.add(&t);
        rust.and(result)
    })?;
    stack_tests(&mut tally, &tools)?;
    // Ignored tests in the host run are the stack tests, which ran above: not skipped.
    tally.ignored = 0;
    eprintln!(
        "xtask: every test passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    tally.print();
    Ok(())
}

/// The trainer's house style, then its real CPU runs (torchrun, DeepSpeed on gloo).
fn trainer_tests(tally: &mut Tally, tools: &Tools, cli: &Path) -> Result<(), String> {
    crate::cmd::run(
        "ruff check trainer",
        tools
            .trainer
            .python()
            .args(["-m", "ruff", "check", "--no-cache", "trainer"])
            .current_dir(repo_root()),
    )?;
    // torchrun's agents leave their folders (torchelastic_*) behind, pytest its last runs.
    let tmp = ScratchTmp::new("pytest")?;
    tally.run(
        "trainer tests (pytest in the trainer's environment)",
        tools
            .trainer
            .python()
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "trainer/tests",
            ])
            // The tests derive each run with the CLI, as a launch does: a copy of the one built
            // above, which the host tests' build beside them may link again (their dev-dependencies
            // turn on other features of shared crates).
            .env("ONRAMP_CLI", cli)
            .env("TMPDIR", tmp.path())
            .current_dir(repo_root()),
    )
}

/// A fresh folder given to a stage of tests as `TMPDIR`, removed with what they left in it when
/// dropped: tools that leave their temporary files behind (chromedriver's profiles, torchrun's
/// folders) leave nothing in the machine's `/tmp`. Its path is short, for Unix sockets.
pub struct ScratchTmp(PathBuf);

impl ScratchTmp {
    pub fn new(stage: &str) -> Result<ScratchTmp, String> {
        let dir = std::env::temp_dir().join(format!("onramp-{stage}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(ScratchTmp(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A copy of the `onramp` CLI built by `build::runner`, in a folder of the target's that no build
/// writes to.
fn cli_copy() -> Result<PathBuf, String> {
    let built = crate::cmd::target_dir().join("debug/onramp");
    let dir = crate::cmd::target_dir().join("pytest-cli");
    let copy = dir.join("onramp");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::copy(&built, &copy))
        .map_err(|e| format!("copying {} to {}: {e}", built.display(), copy.display()))?;
    Ok(copy)
}

/// The wasm tests of the crates that have them, in headless Chromium.
fn wasm_tests(tally: &mut Tally, tools: &Tools) -> Result<(), String> {
    let webdriver_json = write_webdriver_json()?;
    // The test runner ends chromedriver without ending its sessions: the profiles chromedriver
    // made (about 55 MB each) and Chromium's own temporary folders stay behind, in this folder.
    let tmp = ScratchTmp::new("wasm-tests")?;
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml"))
        .map_err(|e| format!("cannot read the workspace's Cargo.toml: {e}"))?;
    let deps_opt = wasm_test_deps_opt(&manifest)?;
    let mut wasm_test = |what: &str, args: &[&str]| {
        tally.run(
            what,
            linted(&mut cargo())
                .args(deps_opt.iter().flat_map(|c| ["--config", c.as_str()]))
                .args(["test", "--target", "wasm32-unknown-unknown"])
                .args(args)
                .env("TMPDIR", tmp.path())
                .env(
                    "PATH",
                    path_with(std::slice::from_ref(&tools.wasm_bindgen_bin)),
                )
                .env("CHROMEDRIVER", &tools.chromedriver)
                .env("WASM_BINDGEN_TEST_WEBDRIVER_JSON", &webdriver_json)
                .env("WASM_BINDGEN_TEST_TIMEOUT", "300"),
        )
    };
    let args = wasm_test_args(&repo_root())?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    wasm_test("wasm tests in headless Chromium", &args)
}

/// The stack tests: one test binary, `tests/tests/e2e/`, its tests run by [`crate::stack_tests`]
/// (two at a time, in name order, a process each).
fn stack_tests(tally: &mut Tally, tools: &Tools) -> Result<(), String> {
    let what = "stack tests (wrangler dev, runner, headless Chromium)";
    let started = Instant::now();
    eprintln!("xtask: {what}");
    let binary = e2e_binary().inspect_err(|_| tally.print())?;
    let tests_dir = repo_root().join("tests");
    // As cargo test runs it: in its package's folder.
    let make = || {
        let mut c = Command::new(&binary);
        c.current_dir(&tests_dir)
            .env("CHROMEDRIVER", &tools.chromedriver)
            // The runner runs every task but tiny-train with the trainer's environment.
            .env("ONRAMP_PYTHON", &tools.trainer.python)
            .env("ONRAMP_SCHEMATHESIS", &tools.schemathesis);
        c
    };
    let failed = crate::stack_tests::run(&make, &mut |d| {
        let failed_before = tally.failed;
        for line in d.output.lines() {
            println!("{line}");
            tally.count(line);
        }
        if !d.passed && tally.failed == failed_before {
            tally.failed += 1; // it ended before its harness counted it, or never ran
        }
        let verdict = if d.passed { "ok" } else { "FAILED" };
        eprintln!(
            "xtask: stack test {}: {verdict} in {:.1} s",
            d.name, d.seconds
        );
    })
    .inspect_err(|_| tally.print())?;
    if !failed.is_empty() {
        tally.print();
        return Err(format!("{what} failed: {}", failed.join(", ")));
    }
    eprintln!(
        "xtask: {what}: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Builds the stack tests' binary and returns its path. Selected from the whole workspace
/// (`--workspace --test e2e`, not `-p onramp-tests`): the features its dependencies are built
/// with are then the host tests' own, so the binary they built runs, where a build of the one
/// package would compile the dependencies whose features differ again (minutes on a new machine).
fn e2e_binary() -> Result<std::path::PathBuf, String> {
    let what = "cargo test --workspace --test e2e --no-run (clippy's lints)";
    let out = linted(&mut cargo())
        .args(["test", "--workspace", "--test", "e2e", "--no-run"])
        .arg("--message-format=json-render-diagnostics")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{what} failed ({})", out.status));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == "e2e")
        .find_map(|v| v["executable"].as_str().map(std::path::PathBuf::from))
        .ok_or_else(|| format!("{what}: cargo named no e2e binary"))
}

/// The capabilities wasm-bindgen-test-runner asks chromedriver for: Debian's Chromium with our
/// flags (the runner adds headless and no-sandbox itself; chromedriver gives a fresh profile).
pub fn write_webdriver_json() -> Result<std::path::PathBuf, String> {
    let dir = repo_root().join("target");
    let path = dir.join("webdriver.json");
    let caps = serde_json::json!({"goog:chromeOptions": {
        "binary": "/usr/bin/chromium",
        "args": onramp_tests::webdriver::CHROMIUM_FLAGS,
    }});
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::write(&path, caps.to_string())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// The dependencies the wasm tests keep optimised. The dev profile optimises the crates whose
/// speed native tests and tiny-train jobs wait on (`Cargo.toml`: candle natively is ~80x slower
/// unoptimised, the tokenizers, hashing, JSON), which for wasm32 only these tests build: on a new
/// machine that compile of the app's tree (Leptos, tokenizers, candle and gemm, again after the
/// size-first build of the same tree) took 1124 s of a CI run here when every dependency was
/// optimised. The tests run the model's own kernels (model-tiny) and page code, so only the
/// crates inside those kernels stay optimised: `wide` (their SIMD) and `half` (bf16 and f16
/// weights widened as they load).
const WASM_TEST_OPTIMISED: &[&str] = &["model-tiny", "wide", "half"];

/// `--config` values that compile every crate the manifest's `[profile.dev.package]` optimises,
/// but those of [`WASM_TEST_OPTIMISED`], unoptimised in the wasm tests.
fn wasm_test_deps_opt(manifest: &str) -> Result<Vec<String>, String> {
    let table: toml::Table =
        toml::from_str(manifest).map_err(|e| format!("the workspace's Cargo.toml: {e}"))?;
    let packages = table
        .get("profile")
        .and_then(|p| p.get("dev"))
        .and_then(|d| d.get("package"))
        .and_then(toml::Value::as_table);
    Ok(packages
        .into_iter()
        .flat_map(|p| p.keys())
        .filter(|name| !WASM_TEST_OPTIMISED.contains(&name.as_str()))
        .map(|name| format!("profile.dev.package.\"{name}\".opt-level = 0"))
        .collect())
}

/// The crates that have wasm tests.
const WASM_TEST_PACKAGES: &[&str] = &["app", "model-tiny", "jobspec"];

/// `cargo test --target wasm32-unknown-unknown` arguments that build and run only the targets
/// with wasm tests (`#[wasm_bindgen_test]`): each crate's `tests/` files that have them, and its
/// library where its own code does. The others hold native `#[test]`s (or nothing, on wasm32),
/// which the wasm test runner does not run, yet each would be compiled for wasm32 again in test
/// mode (the app's library and binary among them: minutes of a CI run here).
fn wasm_test_args(root: &Path) -> Result<Vec<String>, String> {
    let has_wasm_tests = |file: &Path| {
        std::fs::read_to_string(file).is_ok_and(|text| text.contains("wasm_bindgen_test]"))
    };
    let rust_files = |dir: &Path| -> Result<Vec<PathBuf>, String> {
        let mut files = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("cannot read {}: {e}", d.display())),
            };
            for path in entries.flatten().map(|e| e.path()) {
                if path.is_dir() {
                    todo.push(path);
                } else if path.extension().is_some_and(|x| x == "rs") {
                    files.push(path);
                }
            }
        }
        files.sort();
        Ok(files)
    };
    let mut args = Vec::new();
    let mut tests = Vec::new();
    for package in WASM_TEST_PACKAGES {
        args.extend(["-p".to_string(), package.to_string()]);
        let dir = root.join(package);
        if rust_files(&dir.join("src"))?
            .iter()
            .any(|f| has_wasm_tests(f))
        {
            args.push("--lib".into());
        }
        for file in rust_files(&dir.join("tests"))? {
            let in_tests_dir = file.parent() == Some(dir.join("tests").as_path());
            let name = file.file_stem().and_then(|n| n.to_str());
            if let (true, Some(name)) = (in_tests_dir, name)
                && has_wasm_tests(&file)
                && !tests.iter().any(|t| t == name)
            {
                tests.push(name.to_string());
            }
        }
    }
    if tests.is_empty() {
        return Err("no wasm test found in the crates that have them".into());
    }
    for t in tests {
        args.extend(["--test".to_string(), t]);
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::Tally;

    /// The wasm test run builds the browser tests, not the crates' native tests for wasm32.
    #[test]
    fn the_wasm_run_builds_only_the_targets_with_wasm_tests() {
        let args = super::wasm_test_args(&crate::cmd::repo_root()).unwrap();
        let args = args.join(" ");
        assert!(
            args.starts_with("-p app -p model-tiny -p jobspec "),
            "{args}"
        );
        for t in ["web", "web_pages", "wasm"] {
            assert!(
                args.contains(&format!("--test {t} ")) || args.ends_with(&format!("--test {t}")),
                "{args}"
            );
        }
        // Native-only test files and the libraries (no wasm tests in their code) are not built.
        assert!(
            !args.contains("--lib") && !args.contains("bad_files"),
            "{args}"
        );
    }

    /// The wasm tests compile unoptimised what the native tests optimise, but the kernels' crates.
    #[test]
    fn the_wasm_tests_optimise_only_the_kernels() {
        let manifest = std::fs::read_to_string(crate::cmd::repo_root().join("Cargo.toml")).unwrap();
        let opt = super::wasm_test_deps_opt(&manifest).unwrap();
        assert!(opt.contains(&"profile.dev.package.\"candle-core\".opt-level = 0".to_string()));
        assert!(opt.contains(&"profile.dev.package.\"tokenizers\".opt-level = 0".to_string()));
        assert!(
            !opt.iter()
                .any(|o| o.contains("wide") || o.contains("model-tiny")),
            "{opt:?}"
        );
        let none = super::wasm_test_deps_opt("[package]\nname = \"x\"\n").unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn counts_libtest_and_wasm_bindgen_closing_lines() {
        let mut t = Tally::default();
        t.count("test result: ok. 12 passed; 0 failed; 3 ignored; 0 measured; 1 filtered out; finished in 0.2s");
        t.count(
            "test result: FAILED. 4 passed; 2 failed; 0 ignored; 0 filtered out; finished in 0.33s",
        );
        t.count("running 5 tests");
        assert_eq!((t.passed, t.failed, t.ignored), (16, 2, 3));
    }

    #[test]
    fn counts_pytest_summaries() {
        let mut t = Tally::default();
        t.count("74 passed in 11.38s");
        t.count("===== 3 passed, 1 failed, 2 skipped, 1 error in 42.10s (0:00:42) =====");
        t.count("12 passed, 3 deselected in 1.0s");
        t.count("tests passed in the end");
        t.count("1 passed in total, then some");
        assert_eq!((t.passed, t.failed, t.ignored), (89, 2, 2));
    }
}
