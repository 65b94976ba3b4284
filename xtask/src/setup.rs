//! `cargo xtask setup`: installs whatever is missing. Tools built from source are installed
//! machine-wide under `~/.cache/onramp/tools/<name>-<version>` and reused by every clone; the
//! Node tools come from package-lock.json with `npm ci`; the trainer's Python environment from
//! `trainer/requirements.lock` (`trainer_env.rs`).

use crate::cmd::{self, locked_version, repo_root, tools_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tools that build what the edge serves (`cargo xtask build`, `deploy`).
#[derive(Debug, Clone)]
pub struct BuildTools {
    /// Folder with `wasm-bindgen` and `wasm-bindgen-test-runner` matching Cargo.lock.
    pub wasm_bindgen_bin: PathBuf,
    pub worker_build: PathBuf,
    pub esbuild: PathBuf,
    pub wasm_opt: PathBuf,
}

/// Where the installed tools are, for the build and the tests.
#[derive(Debug, Clone)]
pub struct Tools {
    pub build: BuildTools,
    pub chromedriver: PathBuf,
    /// The trainer's Python environment (PyTorch, Transformers, PEFT, DeepSpeed).
    pub trainer: crate::trainer_env::TrainerEnv,
    /// The contract fuzzer, schemathesis's `st`.
    pub schemathesis: PathBuf,
}

impl std::ops::Deref for Tools {
    type Target = BuildTools;
    fn deref(&self) -> &BuildTools {
        &self.build
    }
}

/// Everything: the build tools, Chromium, the Slurm chroot, the trainer's environment and the
/// contract fuzzer's. On a new machine the build tools are compiled (minutes of both cores)
/// while the chroot and the Python environments are downloaded and unpacked (minutes of mostly
/// waiting) beside them; apt runs first, alone, since two apt-gets cannot hold its lock at once.
pub fn run() -> Result<Tools, String> {
    run_then(|_| Ok(()))
}

/// [`run`], with `then` (the build of what the tools build, which needs only the build tools)
/// run once the build tools are there, beside the downloads if they are still going: on a new
/// machine the workspace's compile overlaps them instead of starting after the last one.
pub fn run_then(then: impl FnOnce(&BuildTools) -> Result<(), String>) -> Result<Tools, String> {
    chromium()?;
    let (build, fetched) = std::thread::scope(|s| {
        let fetching = s.spawn(|| -> Result<_, String> {
            crate::slurm::ensure()?;
            let trainer = crate::trainer_env::ensure()?;
            let schemathesis = crate::trainer_env::schemathesis()?;
            Ok((trainer, schemathesis))
        });
        let build = build_tools().and_then(|b| then(&b).map(|()| b));
        let fetched = fetching.join().unwrap_or_else(|_| {
            Err("the setup of the chroot and the Python environments panicked".into())
        });
        (build, fetched)
    });
    let build = build?;
    let (trainer, schemathesis) = fetched?;
    Ok(Tools {
        build,
        chromedriver: PathBuf::from("/usr/bin/chromedriver"),
        trainer,
        schemathesis,
    })
}

/// Only what building the app and the worker needs (a deploy installs no test tools).
pub fn build_tools() -> Result<BuildTools, String> {
    wasm_target()?;
    let wb_version = locked_version("wasm-bindgen")?;
    let wasm_bindgen_bin = cargo_tool("wasm-bindgen-cli", &wb_version, "wasm-bindgen")?;
    let worker_version = locked_version("worker")?;
    let worker_build = cargo_tool("worker-build", &worker_version, "worker-build")?;
    let _ = std::fs::remove_dir_all(install_target());
    node_tools()?;
    let root = repo_root();
    Ok(BuildTools {
        wasm_bindgen_bin,
        worker_build: worker_build.join("worker-build"),
        esbuild: root.join("node_modules/esbuild/bin/esbuild"),
        wasm_opt: root.join("node_modules/binaryen/bin/wasm-opt"),
    })
}

/// rustfmt and clippy, which `cargo xtask test` runs before anything else.
pub fn rust_components() -> Result<(), String> {
    let have = |tool: &str| cmd::output(cmd::cargo().args([tool, "--version"])).is_some();
    if have("fmt") && have("clippy") {
        return Ok(());
    }
    cmd::run(
        "rustup component add rustfmt clippy",
        Command::new("rustup").args(["component", "add", "rustfmt", "clippy"]),
    )
}

fn wasm_target() -> Result<(), String> {
    let installed = cmd::output(Command::new("rustup").args(["target", "list", "--installed"]))
        .unwrap_or_default();
    if installed
        .lines()
        .any(|l| l.trim() == "wasm32-unknown-unknown")
    {
        return Ok(());
    }
    cmd::run(
        "rustup target add wasm32-unknown-unknown",
        Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]),
    )
}

/// Debian's chromium and chromium-driver, for the wasm tests and the end-to-end tests, and curl,
/// which the Slurm job script's own test runs (as the job does on the cluster).
fn chromium() -> Result<(), String> {
    if [
        "/usr/bin/chromium",
        "/usr/bin/chromedriver",
        "/usr/bin/curl",
    ]
    .iter()
    .all(|p| Path::new(p).exists())
    {
        return Ok(());
    }
    let sudo = if cmd::output(Command::new("id").arg("-u")).as_deref() == Some("0\n") {
        vec![]
    } else {
        vec!["sudo"]
    };
    let apt = |args: &[&str]| {
        let mut c = Command::new(sudo.first().copied().unwrap_or("apt-get"));
        if !sudo.is_empty() {
            c.arg("apt-get");
        }
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    cmd::run("apt-get update", &mut apt(&["update", "-qq"]))?;
    cmd::run(
        "apt-get install chromium chromium-driver curl",
        &mut apt(&[
            "install",
            "-y",
            "-qq",
            "chromium",
            "chromium-driver",
            "curl",
        ]),
    )
}

/// `cargo install NAME --version VERSION` into the machine-wide cache, unless that exact version
/// is already there. Returns the folder holding its binaries.
fn cargo_tool(name: &str, version: &str, probe_bin: &str) -> Result<PathBuf, String> {
    let root = tools_dir().join(format!("{name}-{version}"));
    let bin = root.join("bin");
    let probe = bin.join(probe_bin);
    let installed = cmd::output(Command::new(&probe).arg("--version")).unwrap_or_default();
    if installed.contains(version) {
        return Ok(bin);
    }
    // Not --locked: a dependency version pinned by the tool's lockfile is missing from the index.
    // Built unoptimised without LTO, in one target folder for both tools (they share clap, serde,
    // ureq's parts and more). Measured here with the crates downloaded, one after the other:
    // 44 + 50 s unoptimised, 100 + 125 s at opt-level 1; wasm-bindgen then binds the app's three
    // binaries in 2.3 s instead of 0.65 s (the same bytes either way).
    cmd::run(
        &format!("cargo install {name} {version} (once per machine, a few minutes)"),
        Command::new("cargo")
            .args(["install", name, "--version", version, "--root"])
            .arg(&root)
            .env("CARGO_TARGET_DIR", install_target())
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
            .env("CARGO_PROFILE_RELEASE_LTO", "false")
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false"),
    )?;
    Ok(bin)
}

/// Where `cargo install` builds the tools, removed once they are installed.
fn install_target() -> PathBuf {
    tools_dir().join(".install-target")
}

/// `npm ci` when node_modules does not match package-lock.json.
fn node_tools() -> Result<(), String> {
    let root = repo_root();
    let lock = std::fs::read(root.join("package-lock.json"))
        .map_err(|e| format!("cannot read package-lock.json: {e}"))?;
    let stamp_path = root.join("node_modules/.onramp-lock-stamp");
    let stamp = crate::models::sha256_hex(&lock);
    if std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(());
    }
    cmd::run(
        "npm ci (wrangler, binaryen)",
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&root),
    )?;
    std::fs::write(&stamp_path, stamp).map_err(|e| format!("cannot write npm stamp: {e}"))
}
