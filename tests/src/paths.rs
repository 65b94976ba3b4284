//! Where things are: the repository, the shared reference data, the built artifacts and the
//! machine-wide tool cache.

use std::path::PathBuf;

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// The read-only reference data beside the checkout (`../shared`), or `ONRAMP_SHARED`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("ONRAMP_SHARED") {
        Some(p) => PathBuf::from(p),
        None => repo_root().join("..").join("shared"),
    }
}

/// The cargo target directory of the workspace.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(p) => PathBuf::from(p),
        None => repo_root().join("target"),
    }
}

/// The static files that the edge serves: the built app, `public/` and the models.
pub fn dist_dir() -> PathBuf {
    repo_root().join("dist")
}

/// Machine-wide cache of installed tools, keyed by name and version, shared by every clone.
pub fn tools_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("ONRAMP_TOOLS_DIR") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache").join("onramp").join("tools")
}

/// The `wrangler` entry script installed by `npm ci` in the repository.
pub fn wrangler_js() -> PathBuf {
    repo_root().join("node_modules/wrangler/bin/wrangler.js")
}

/// The runner binary built by cargo (debug profile; its dependencies are optimised).
pub fn runner_bin() -> PathBuf {
    match std::env::var_os("ONRAMP_RUNNER_BIN") {
        Some(p) => PathBuf::from(p),
        None => target_dir().join("debug").join("onramp-runner"),
    }
}

/// The `onramp` CLI binary built by `cargo xtask build` (debug profile).
pub fn cli_bin() -> PathBuf {
    match std::env::var_os("ONRAMP_CLI_BIN") {
        Some(p) => PathBuf::from(p),
        None => target_dir().join("debug").join("onramp"),
    }
}
