//! The saved sign-in: which edge and which API token, in one small file only its owner can read.
//! `onramp login` writes it; `ONRAMP_TOKEN` and `ONRAMP_EDGE` override it for scripts and CI.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What `onramp login` keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    pub edge: String,
    pub email: String,
    pub token: String,
}

/// The folder: `ONRAMP_CONFIG_DIR`, else `$XDG_CONFIG_HOME/onramp`, else `~/.config/onramp`.
pub fn dir_from(
    onramp: Option<PathBuf>,
    xdg: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    onramp
        .or_else(|| xdg.map(|x| x.join("onramp")))
        .or_else(|| home.map(|h| h.join(".config").join("onramp")))
}

/// The credentials file of this process's environment.
pub fn path() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    dir_from(
        var("ONRAMP_CONFIG_DIR"),
        var("XDG_CONFIG_HOME"),
        var("HOME"),
    )
    .map(|d| d.join("credentials.json"))
}

/// The saved sign-in, if any; a damaged file is an error that names it, not a silent sign-out.
pub fn load(path: &Path) -> Result<Option<Saved>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "{} is damaged ({e}); remove it or run onramp login again",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Writes the file whole (a temporary file renamed over it), readable by its owner only.
pub fn save(path: &Path, saved: &Saved) -> Result<(), String> {
    let parent = path
        .parent()
        .ok_or_else(|| format!("{} has no folder", path.display()))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec_pretty(saved).map_err(|e| format!("cannot encode: {e}"))?;
    write_private(&tmp, &text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot move {}: {e}", path.display()))
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

/// Removes the saved sign-in; true when there was one.
pub fn forget(path: &Path) -> Result<bool, String> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_follows_onramp_then_xdg_then_home() {
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(dir_from(p("/o"), p("/x"), p("/h")), p("/o"));
        assert_eq!(dir_from(None, p("/x"), p("/h")), p("/x/onramp"));
        assert_eq!(dir_from(None, None, p("/h")), p("/h/.config/onramp"));
        assert_eq!(dir_from(None, None, None), None);
    }

    #[test]
    fn saved_sign_ins_round_trip_privately_and_damage_is_named() {
        let dir = std::env::temp_dir().join(format!("onramp-cred-{}", std::process::id()));
        let path = dir.join("nested").join("credentials.json");
        assert_eq!(load(&path), Ok(None));
        let s = Saved {
            edge: "http://localhost:8787".into(),
            email: "a@b.c".into(),
            token: "onr_x".into(),
        };
        save(&path, &s).unwrap();
        assert_eq!(load(&path), Ok(Some(s)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "readable by others: {mode:o}");
        }
        std::fs::write(&path, b"{not json").unwrap();
        let err = load(&path).unwrap_err();
        assert!(err.contains("is damaged"), "{err}");
        assert_eq!(forget(&path), Ok(true));
        assert_eq!(forget(&path), Ok(false));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
