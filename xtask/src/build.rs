//! Building the served artifacts: the app (wasm + JS glue) with `public/` and the verified models
//! into `dist/`, the worker with worker-build into `edge/build/`, and the native runner.

use crate::cmd::{self, cargo, dist_dir, repo_root, shared_dir, target_dir};
use crate::setup::BuildTools;
use std::path::Path;
use std::process::Command;

/// Everything the tests drive: what is served, and the runner and CLI (debug builds).
pub fn all(tools: &BuildTools) -> Result<(), String> {
    served(tools)?;
    runner()
}

/// What the edge serves: the assets, the app and the worker.
pub fn served(tools: &BuildTools) -> Result<(), String> {
    assets()?;
    app(tools)?;
    edge(tools)
}

/// `public/`, the verified reference models and the job spec's JSON Schema (served at the stable
/// `/schema/jobspec.schema.json`, for editors) into `dist/`.
pub fn assets() -> Result<(), String> {
    let dist = dist_dir();
    crate::models::copy_verified(&shared_dir().join("models"), &dist.join("models"))?;
    let schema_dir = dist.join("schema");
    std::fs::create_dir_all(&schema_dir)
        .map_err(|e| format!("cannot create {}: {e}", schema_dir.display()))?;
    std::fs::write(
        schema_dir.join("jobspec.schema.json"),
        jobspec::schema::json_schema_text(),
    )
    .map_err(|e| format!("cannot write the spec's schema: {e}"))?;
    copy_dir(&repo_root().join("public"), &dist)
}

/// The Leptos app, its inference worker and its dataset checker's worker (`datacheck`): one
/// build of the three binaries with the size-first
/// `wasm-release` profile, then wasm-bindgen's glue into `dist/pkg` — ES module glue for the page
/// (`app.js`), classic-script glue for the Web Workers (`worker.js` and `datacheck.js`, loaded by
/// `public/worker.js` and `public/datacheck.js` with `importScripts`) — without the name section.
/// Then npm binaryen's `wasm-opt -Oz` shrinks each (a result kept only when it is smaller); `ONRAMP_WASM_OPT=0` skips that step for
/// quicker local rebuilds.
pub fn app(tools: &BuildTools) -> Result<(), String> {
    cmd::run(
        "cargo build app + worker (wasm32, wasm-release profile; clippy's lints)",
        linted(&mut cargo()).args([
            "build",
            "--quiet",
            "-p",
            "app",
            "-p",
            "app-worker",
            // Leptos's type-erased components: the page's wasm is about a tenth smaller after
            // gzip (430 -> 388 KB with every page). Only this build: appended to the target's
            // rustflags from .cargo/config.toml, so the wasm tests and the edge keep their cache.
            "--config",
            "target.wasm32-unknown-unknown.rustflags=[\"--cfg\", \"erase_components\"]",
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            "wasm-release",
            "--bin",
            "app",
            "--bin",
            "worker",
            "--bin",
            "datacheck",
        ]),
    )?;
    let release = target_dir().join("wasm32-unknown-unknown/wasm-release");
    let optimise = std::env::var("ONRAMP_WASM_OPT").map_or(true, |v| v != "0");
    let mut bound = Vec::new();
    for (bin, target) in [
        ("app", "web"),
        ("worker", "no-modules"),
        ("datacheck", "no-modules"),
    ] {
        let wasm = release.join(format!("{bin}.wasm"));
        if bindgen(tools, &wasm, target, bin)? && optimise {
            bound.push(dist_dir().join(format!("pkg/{bin}_bg.wasm")));
        }
    }
    // wasm-opt runs on one core: the three at once.
    std::thread::scope(|scope| {
        let runs: Vec<_> = bound
            .iter()
            .map(|wasm| scope.spawn(|| wasm_opt(tools, wasm)))
            .collect();
        runs.into_iter().try_for_each(|r| {
            r.join()
                .map_err(|_| "wasm-opt's thread panicked".to_string())?
        })
    })
}

/// Clippy's lints, warnings as errors, on the workspace's crates that a build compiles, as
/// `cargo clippy -- -D warnings` runs them (`RUSTC_WORKSPACE_WRAPPER=clippy-driver`, which lints
/// and then compiles as rustc does). The two wasm builds lint what they build, so the wasm-only
/// code (the app's browser calls, the edge's `worker/`) is linted without checking every wasm
/// dependency a second time in a `cargo clippy --target wasm32` of its own (minutes of both
/// cores on a new machine). Every build of these crates lints, so that none rebuilds another's.
pub fn linted(cmd: &mut Command) -> &mut Command {
    let driver = cmd::output(Command::new("rustup").args(["which", "clippy-driver"]))
        .map_or_else(|| "clippy-driver".to_string(), |p| p.trim().to_string());
    cmd.env("RUSTC_WORKSPACE_WRAPPER", driver).env(
        "CLIPPY_ARGS",
        "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
    )
}

/// `wasm-opt -Oz` on a bindgen output, replacing it only when the result is smaller. Its result
/// is kept in the target folder under the input's SHA-256 (with wasm-opt's own and the flags'),
/// so an unchanged binary, from a fresh clone too, is not optimised again (tens of seconds).
fn wasm_opt(tools: &BuildTools, wasm: &Path) -> Result<(), String> {
    use sha2::{Digest, Sha256};
    const FLAGS: &[&str] = &[
        "-Oz",
        "--enable-simd",
        "--enable-bulk-memory",
        "--enable-nontrapping-float-to-int",
        "--enable-sign-ext",
        "--enable-mutable-globals",
        "--enable-reference-types",
        "--enable-multivalue",
    ];
    let input = std::fs::read(wasm).map_err(|e| format!("cannot read {}: {e}", wasm.display()))?;
    // wasm-opt by its version, not its path (npm's copy lives in each checkout).
    let version = cmd::output(Command::new(&tools.wasm_opt).arg("--version")).unwrap_or_default();
    let mut key = Sha256::new();
    key.update(&input);
    key.update(version.as_bytes());
    key.update(FLAGS.join(" ").as_bytes());
    let cache = target_dir().join("wasm-opt-cache");
    let kept = cache.join(format!("{}.wasm", hex::encode(key.finalize())));
    if let Ok(optimised) = std::fs::read(&kept) {
        eprintln!(
            "xtask: wasm-opt {}: unchanged, kept from an earlier build",
            wasm.display()
        );
        // Used now: the newest, for `prune`.
        let _ = std::fs::File::options()
            .append(true)
            .open(&kept)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        return std::fs::write(wasm, optimised)
            .map_err(|e| format!("cannot write {}: {e}", wasm.display()));
    }
    let out = wasm.with_extension("opt.wasm");
    cmd::run(
        &format!("wasm-opt -Oz {}", wasm.display()),
        Command::new(&tools.wasm_opt)
            .args(FLAGS)
            .arg(wasm)
            .arg("-o")
            .arg(&out),
    )?;
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(u64::MAX);
    if size(&out) < size(wasm) {
        std::fs::rename(&out, wasm)
            .map_err(|e| format!("cannot replace {}: {e}", wasm.display()))?;
    } else {
        std::fs::remove_file(&out).map_err(|e| format!("cannot remove {}: {e}", out.display()))?;
    }
    // Written whole under another name, then renamed: a build stopped midway leaves no half file.
    let part = kept.with_extension(format!("{}.part", std::process::id()));
    std::fs::create_dir_all(&cache)
        .and_then(|()| std::fs::copy(wasm, &part))
        .and_then(|_| std::fs::rename(&part, &kept))
        .map_err(|e| format!("cannot keep wasm-opt's result in {}: {e}", cache.display()))?;
    prune(&cache, KEPT_OPTIMISED);
    Ok(())
}

/// How many of wasm-opt's results the target folder keeps (the newest).
const KEPT_OPTIMISED: usize = 12;

/// Removes all but the `keep` newest files of `dir`.
fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, path) in files.into_iter().skip(keep) {
        let _ = std::fs::remove_file(path);
    }
}

/// Runs wasm-bindgen unless its output is newer than the input; true when it ran.
fn bindgen(tools: &BuildTools, wasm: &Path, target: &str, out_name: &str) -> Result<bool, String> {
    let out_dir = dist_dir().join("pkg");
    let out_wasm = out_dir.join(format!("{out_name}_bg.wasm"));
    if is_newer(&out_wasm, wasm) {
        return Ok(false);
    }
    cmd::run(
        &format!("wasm-bindgen {out_name}"),
        Command::new(tools.wasm_bindgen_bin.join("wasm-bindgen"))
            .args([
                "--target",
                target,
                "--no-typescript",
                // Function names help only a debugger; in the browser they are dead weight.
                "--remove-name-section",
                "--remove-producers-section",
                "--out-name",
                out_name,
                "--out-dir",
            ])
            .arg(&out_dir)
            .arg(wasm),
    )?;
    Ok(true)
}

/// The worker, built by worker-build with our pinned wasm-bindgen and wrangler's esbuild so that
/// nothing is downloaded.
pub fn edge(tools: &BuildTools) -> Result<(), String> {
    cmd::run(
        "worker-build edge (wasm32, release; clippy's lints)",
        linted(&mut Command::new(&tools.worker_build))
            .arg("--release")
            .current_dir(repo_root().join("edge"))
            .env(
                "WASM_BINDGEN_BIN",
                tools.wasm_bindgen_bin.join("wasm-bindgen"),
            )
            .env("ESBUILD_BIN", &tools.esbuild)
            .env("WASM_OPT_BIN", &tools.wasm_opt)
            .env("CARGO_TARGET_DIR", target_dir()),
    )
}

/// The native runner and the `onramp` CLI that the stack tests drive (debug profile; their
/// dependencies and model-tiny are optimised).
pub fn runner() -> Result<(), String> {
    cmd::run(
        "cargo build onramp-runner onramp-cli (clippy's lints)",
        linted(&mut cargo()).args([
            "build",
            "--quiet",
            "-p",
            "onramp-runner",
            "-p",
            "onramp-cli",
        ]),
    )
}

/// The runner as users get it, for `cargo xtask dev` and the training benchmark: a release build
/// (cached in the target folder like every other build); returns the binary's path.
pub fn runner_release() -> Result<std::path::PathBuf, String> {
    cmd::run(
        "cargo build --release onramp-runner",
        cargo().args(["build", "--quiet", "--release", "-p", "onramp-runner"]),
    )?;
    Ok(target_dir().join("release/onramp-runner"))
}

/// Whether `out` exists and is at least as new as `input`.
fn is_newer(out: &Path, input: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((modified(out), modified(input)), (Some(o), Some(i)) if o >= i)
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            std::fs::copy(&path, &dest)
                .map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
        }
    }
    Ok(())
}
