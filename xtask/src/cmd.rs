//! Running commands with their failures explained, and the repository's paths.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

pub use onramp_tests::paths::{dist_dir, repo_root, shared_dir, target_dir, tools_dir};

/// Runs a command to completion, printing what runs and how long it took.
pub fn run(what: &str, cmd: &mut Command) -> Result<(), String> {
    let started = Instant::now();
    eprintln!("xtask: {what}");
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if !status.success() {
        return Err(format!("{what} failed ({status})"));
    }
    eprintln!(
        "xtask: {what}: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs a command and returns its standard output, or `None` when it cannot run or fails.
pub fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The cargo that runs this xtask.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(repo_root());
    c
}

/// The version of a package as resolved in Cargo.lock.
pub fn locked_version(package: &str) -> Result<String, String> {
    let lock = std::fs::read_to_string(repo_root().join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let needle = format!("name = \"{package}\"\nversion = \"");
    let start = lock
        .find(&needle)
        .ok_or_else(|| format!("{package} is not in Cargo.lock"))?
        + needle.len();
    let end = lock[start..].find('"').ok_or("Cargo.lock is malformed")?;
    Ok(lock[start..start + end].to_string())
}

/// `PATH` with extra folders in front.
pub fn path_with(extra: &[PathBuf]) -> std::ffi::OsString {
    let mut parts: Vec<PathBuf> = extra.to_vec();
    if let Some(p) = std::env::var_os("PATH") {
        parts.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(parts).unwrap_or_default()
}
