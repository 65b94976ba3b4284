//! What a job needs to run `onramp-train` (every non-tiny task) on this machine's CPU: the run
//! jobspec derives from the spec written into its folder as `onramp-run.json` (what the command
//! `python -m onramp_train onramp-run.json` reads; the spec beside it as `spec.toml`, for the
//! record), and an environment that finds the trainer's Python (`ONRAMP_PYTHON`, the interpreter
//! of its environment, else the one `cargo xtask setup` installed: its `bin/` goes first on
//! `PATH`), the trainer's source when it is not
//! installed there (`ONRAMP_TRAINER_SRC`, else `trainer/src` of this checkout), and the models
//! and corpora of the runner's assets, and its benchmark tasks (`ONRAMP_EVAL_TASKS`) when the
//! operator keeps some.

use crate::assets::Assets;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Writes the spec and its run next to the job and returns the variables its command needs.
pub fn prepare(
    dir: &Path,
    spec_toml: &str,
    assets: &Assets,
) -> Result<Vec<(String, OsString)>, String> {
    // Written new, never through a link a job left at the name (an earlier attempt ran here).
    let write = |name: &str, bytes: &[u8]| {
        crate::confined::write(dir, Path::new(name), bytes)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()))
    };
    write("spec.toml", spec_toml.as_bytes())?;
    let (valid, diags) = jobspec::validate_toml(spec_toml);
    let Some(v) = valid else {
        let first = diags
            .iter()
            .find(|d| d.is_error())
            .map_or_else(String::new, |d| format!(" ({}: {})", d.path, d.message.en));
        return Err(format!("the spec is not valid{first}"));
    };
    write(
        jobspec::trainer::RUN_FILE,
        jobspec::trainer::run_json(&v).as_bytes(),
    )?;
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
    let mut env = vec![
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
    ];
    if let Some(tasks) = &assets.eval_tasks {
        env.push(("ONRAMP_EVAL_TASKS".into(), tasks.clone().into_os_string()));
    }
    Ok(env)
}

/// For a spec that continues an earlier job (`checkpoint.resume_from`, the edge's id of a job
/// of the same account, which the edge has checked): that job's latest checkpoint, copied into
/// this job's `out/` before the trainer starts, so that it resumes there. Once only: a job
/// that starts again in its folder finds its own checkpoints and keeps them. `folder_of` finds
/// the earlier job's folder on this runner; a job that did not run here (or left nothing) is
/// the trainer's to fetch from the edge, where it uploaded its checkpoint.
pub fn continue_from(
    dir: &Path,
    spec_toml: &str,
    folder_of: impl Fn(&str) -> Option<PathBuf>,
) -> Result<(), String> {
    let Some(id) = jobspec::validate_toml(spec_toml)
        .0
        .and_then(|v| v.spec().checkpoint.resume_from.clone())
    else {
        return Ok(());
    };
    let out = dir.join("out");
    if latest_checkpoint(&out).is_some() {
        return Ok(());
    }
    // Not run here, or nothing left of it: the trainer fetches the checkpoint that job uploaded
    // to the edge (`checkpoint.upload`), or says that there is none.
    let Some(last) = folder_of(&id).and_then(|from| latest_checkpoint(&from.join("out"))) else {
        return Ok(());
    };
    let name = last
        .file_name()
        .ok_or_else(|| format!("job {id}'s checkpoint has no folder name"))?;
    // Into this job's own `out`, never through a link an earlier attempt of it left there.
    match std::fs::symlink_metadata(&out) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{} is not a folder", out.display())),
        Err(_) => std::fs::create_dir(&out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?,
    }
    copy_tree(&last, &out.join(name))
        .map_err(|e| format!("cannot copy the checkpoint of job {id}: {e}"))
}

/// The `checkpoint-<step>` folder with the highest step in `out`, as the Trainer names them.
/// Links are not followed: neither `out` nor a `checkpoint-*` that an earlier job made a link
/// (to the runner's records, say) is read.
fn latest_checkpoint(out: &Path) -> Option<PathBuf> {
    if !std::fs::symlink_metadata(out).ok()?.is_dir() {
        return None;
    }
    std::fs::read_dir(out)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let step: u64 = name.strip_prefix("checkpoint-")?.parse().ok()?;
            Some((step, e.path()))
        })
        .max()
        .map(|(_, p)| p)
}

/// A copy of the folder `from` at `to`: hard links where the file system allows (a checkpoint
/// is never written again once saved, and a copy of a large model takes long), else copies.
/// Links and other special files are not followed, on either side: whatever is already at a
/// name in `to` that is not a folder (a link a job left there) is removed, not written through.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(to) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            std::fs::remove_file(to)?;
            std::fs::create_dir(to)?;
        }
        Err(_) => std::fs::create_dir(to)?,
    }
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            if std::fs::symlink_metadata(&target).is_ok() {
                std::fs::remove_file(&target)?;
            }
            if std::fs::hard_link(entry.path(), &target).is_err() {
                std::fs::copy(entry.path(), &target)?;
            }
        }
    }
    Ok(())
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

    /// A LoRA spec on the CPU that continues `from` (when given).
    fn lora_spec(from: Option<&str>) -> String {
        let mut s = String::from(
            "name = \"c\"\ntask = \"lora\"\nbackend = \"runner\"\n\
             [model]\nname = \"mini\"\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\nffn = 172\nvocab = 512\n\
             [data]\ndataset = \"tinyshakespeare\"\nseq_len = 64\n\
             [train]\nsteps = 4\nmicro_batch = 1\nlr = 1e-2\nlora_rank = 8\n\
             [resources]\ncard = \"cpu\"\ntime_limit = \"10m\"\n",
        );
        if let Some(id) = from {
            s.push_str(&format!("[checkpoint]\nresume_from = \"{id}\"\n"));
        }
        s
    }

    #[test]
    fn a_job_that_continues_another_starts_from_its_latest_checkpoint_once() {
        let root = std::env::temp_dir().join(format!("runner-continue-{}", std::process::id()));
        let (earlier, dir) = (root.join("earlier"), root.join("new"));
        for step in [2, 10, 9] {
            let ck = earlier.join(format!("out/checkpoint-{step}"));
            std::fs::create_dir_all(&ck).unwrap();
            std::fs::write(ck.join("weights"), format!("step {step}")).unwrap();
        }
        std::fs::create_dir_all(earlier.join("out/checkpoint-x")).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let spec = lora_spec(Some("ab12"));
        assert!(jobspec::validate_toml(&spec).0.is_some(), "{spec}");
        let found = |id: &str| (id == "ab12").then(|| earlier.clone());
        // No resume_from: nothing is copied, nothing is asked.
        continue_from(&dir, &lora_spec(None), |_| panic!("asked")).unwrap();
        assert!(!dir.join("out").exists());
        continue_from(&dir, &spec, found).unwrap();
        let copied = dir.join("out/checkpoint-10/weights");
        assert_eq!(std::fs::read_to_string(&copied).unwrap(), "step 10");
        assert!(!dir.join("out/checkpoint-9").exists());
        // Started again, the job keeps its own checkpoints.
        std::fs::create_dir_all(dir.join("out/checkpoint-14")).unwrap();
        std::fs::remove_dir_all(earlier.join("out/checkpoint-10")).unwrap();
        continue_from(&dir, &spec, found).unwrap();
        assert!(!dir.join("out/checkpoint-9").exists());
        // An earlier job unknown here, or without checkpoints: nothing is copied, and the trainer
        // fetches what that job uploaded to the edge (resume.py).
        let other = root.join("other");
        std::fs::create_dir_all(&other).unwrap();
        continue_from(&other, &spec, |_| None).unwrap();
        let empty = root.join("empty");
        std::fs::create_dir_all(empty.join("out")).unwrap();
        continue_from(&other, &spec, |_| Some(empty.clone())).unwrap();
        assert!(!other.join("out").exists());
        std::fs::remove_dir_all(&root).unwrap_or_default();
    }

    /// Links a job left in its folder before its runner restarted are not written through:
    /// neither its `out` nor a file in the checkpoint folder the copy fills.
    #[test]
    fn a_continued_checkpoint_is_not_copied_through_links() {
        let root = std::env::temp_dir().join(format!("runner-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (earlier, dir, victim) = (root.join("earlier"), root.join("new"), root.join("victim"));
        std::fs::create_dir_all(earlier.join("out/checkpoint-3")).unwrap();
        std::fs::write(earlier.join("out/checkpoint-3/weights"), "w").unwrap();
        std::fs::create_dir_all(&victim).unwrap();
        std::fs::write(victim.join("record.json"), "keep").unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let spec = lora_spec(Some("ab12"));
        let found = |id: &str| (id == "ab12").then(|| earlier.clone());
        std::os::unix::fs::symlink(&victim, dir.join("out")).unwrap();
        assert!(continue_from(&dir, &spec, found).is_err());
        assert!(!victim.join("checkpoint-3").exists());
        std::fs::remove_file(dir.join("out")).unwrap();
        std::fs::create_dir_all(dir.join("out/checkpoint-3")).unwrap();
        let planted = dir.join("out/checkpoint-3/weights");
        std::os::unix::fs::symlink(victim.join("record.json"), &planted).unwrap();
        copy_tree(
            &earlier.join("out/checkpoint-3"),
            &dir.join("out/checkpoint-3"),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(victim.join("record.json")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_to_string(&planted).unwrap(), "w");
        assert!(!std::fs::symlink_metadata(&planted).unwrap().is_symlink());
        std::fs::remove_dir_all(&root).unwrap_or_default();
    }

    #[test]
    fn writes_the_spec_and_its_run_and_points_at_the_assets() {
        let dir = std::env::temp_dir().join(format!("runner-trainer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let assets = Assets {
            root: PathBuf::from("/state/assets"),
            eval_tasks: Some(PathBuf::from("/srv/eval")),
        };
        let spec = lora_spec(None);
        let env = prepare(&dir, &spec, &assets).unwrap_or_default();
        assert_eq!(
            std::fs::read_to_string(dir.join("spec.toml")).unwrap_or_default(),
            spec
        );
        let (v, _) = jobspec::validate_toml(&spec);
        let v = v.expect("valid");
        assert_eq!(
            std::fs::read_to_string(dir.join(jobspec::trainer::RUN_FILE)).unwrap_or_default(),
            jobspec::trainer::run_json(&v),
            "the run the trainer reads is jobspec's"
        );
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("ONRAMP_MODELS"), Some("/state/assets/models".into()));
        assert_eq!(get("ONRAMP_DATASETS"), Some("/state/assets/data".into()));
        assert!(get("PYTHONPATH").is_some_and(|p| Path::new(&p).ends_with("trainer/src")));
        assert_eq!(get("ONRAMP_EVAL_TASKS"), Some("/srv/eval".into()));
        let e = prepare(&dir, "name = \"x\"\n", &assets).unwrap_err();
        assert!(e.contains("not valid"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap_or_default();
    }
}
