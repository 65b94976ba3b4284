//! What a job needs to run `onramp-train` (every non-tiny task) on this machine's CPU: the spec
//! written into its folder as `spec.toml` (what the command `python -m onramp_train spec.toml`
//! reads; on a GPU also the plan's memory advice, `onramp-plan.json`), and an environment that finds the trainer's Python (`ONRAMP_PYTHON`, the interpreter
//! of its environment, else the one `cargo xtask setup` installed: its `bin/` goes first on
//! `PATH`), the trainer's source when it is not
//! installed there (`ONRAMP_TRAINER_SRC`, else `trainer/src` of this checkout), and the models
//! and corpora of the runner's assets.

use crate::assets::Assets;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Writes the spec next to the job and returns the variables its command needs.
pub fn prepare(
    dir: &Path,
    spec_toml: &str,
    assets: &Assets,
) -> Result<Vec<(String, OsString)>, String> {
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, spec_toml)
        .map_err(|e| format!("cannot write {}: {e}", spec.display()))?;
    // On a GPU, the plan's estimate and fixes, which the trainer quotes if CUDA runs out of memory.
    if let (Some(v), _) = jobspec::validate_toml(spec_toml)
        && v.card().is_gpu
    {
        let plan = dir.join(jobspec::launch::PLAN_FILE);
        std::fs::write(&plan, jobspec::launch::oom_advice_json(&v))
            .map_err(|e| format!("cannot write {}: {e}", plan.display()))?;
    }
    let mut path: Vec<PathBuf> = Vec::new();
    let python = std::env::var_os("ONRAMP_PYTHON")
        .map(PathBuf::from)
        .or_else(installed_python);
    if let Some(bin) = python.as_deref().and_then(Path::parent) {
        path.push(bin.to_path_buf());
    }
    if let Some(p) = std::env::var_os("PATH") {
        path.extend(std::env::split_paths(&p));
    }
    let src = std::env::var_os("ONRAMP_TRAINER_SRC").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../trainer/src"),
        PathBuf::from,
    );
    Ok(vec![
        (
            "PATH".into(),
            std::env::join_paths(path).map_err(|e| format!("PATH: {e}"))?,
        ),
        ("PYTHONPATH".into(), src.into_os_string()),
        (
            "ONRAMP_MODELS".into(),
            assets.root.join("models").into_os_string(),
        ),
        (
            "ONRAMP_DATASETS".into(),
            assets.root.join("data").into_os_string(),
        ),
    ])
}

/// The environment `cargo xtask setup` installed (`~/.cache/onramp/tools/trainer-venv-<hash>`,
/// complete ones only; the newest when the lock changed over time), for a runner started
/// without `ONRAMP_PYTHON`.
fn installed_python() -> Option<PathBuf> {
    let tools = match std::env::var_os("ONRAMP_TOOLS_DIR") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/onramp/tools"),
    };
    std::fs::read_dir(tools)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("trainer-venv-"))
        .filter(|e| e.path().join(".onramp-complete").is_file())
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, dir)| dir.join("bin/python"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_spec_and_points_at_the_assets() {
        let dir = std::env::temp_dir().join(format!("runner-trainer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let assets = Assets {
            root: PathBuf::from("/state/assets"),
        };
        let env = prepare(&dir, "name = \"x\"\n", &assets).unwrap_or_default();
        assert_eq!(
            std::fs::read_to_string(dir.join("spec.toml")).unwrap_or_default(),
            "name = \"x\"\n"
        );
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("ONRAMP_MODELS"), Some("/state/assets/models".into()));
        assert_eq!(get("ONRAMP_DATASETS"), Some("/state/assets/data".into()));
        assert!(get("PYTHONPATH").is_some_and(|p| Path::new(&p).ends_with("trainer/src")));
        std::fs::remove_dir_all(&dir).unwrap_or_default();
    }
}
