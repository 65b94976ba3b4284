//! D1's database for a stack's state folder, migrated. `wrangler d1 migrations apply` costs a
//! Node start and a workerd start (about 4 s of CPU here) for a few hundred kilobytes of
//! SQLite, and the stack tests start about sixty stacks: a new state folder gets a copy of a
//! database migrated once, kept in the target folder under a key of everything that shapes it
//! (the migrations, `wrangler.toml`, wrangler's version). A state folder that already has a
//! database (a stack started again, `cargo xtask dev`'s) gets `migrations apply` as before,
//! unless it was copied from the current template, which has every migration.

use crate::paths;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// How the stack runs wrangler for a state folder (`stack::wrangler`).
pub(super) type Wrangler = fn(&Path) -> Command;

/// Where D1 keeps its databases under a `--persist-to` folder.
const D1: &str = "v3/d1";
/// In a persist folder: the key of the template its database was copied from.
const MARK: &str = "d1-template-key";

/// Gives `persist` a migrated D1 database (see the module's comment).
pub(super) fn migrate(wrangler: Wrangler, state_dir: &Path, persist: &Path) -> Result<(), String> {
    let key = template_key()?;
    if persist.join(D1).exists() {
        if std::fs::read_to_string(persist.join(MARK)).is_ok_and(|k| k == key) {
            return Ok(());
        }
        return apply(wrangler, state_dir, persist);
    }
    let template = template(wrangler)?;
    copy_dir(&template.join(D1), &persist.join(D1))?;
    std::fs::write(persist.join(MARK), &key)
        .map_err(|e| format!("cannot write {}: {e}", persist.join(MARK).display()))
}

/// `wrangler d1 migrations apply DB --local` on `persist`.
fn apply(wrangler: Wrangler, state_dir: &Path, persist: &Path) -> Result<(), String> {
    let out = wrangler(state_dir)
        .args(["d1", "migrations", "apply", "DB", "--local", "--persist-to"])
        .arg(persist)
        .output()
        .map_err(|e| format!("cannot run wrangler d1 migrations apply: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "wrangler d1 migrations apply failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// The key of the database the migrations make: a hash of the migration files (names and
/// bytes), `wrangler.toml` (the database's id names its file) and wrangler's `package.json`.
fn template_key() -> Result<String, String> {
    static KEY: OnceLock<Result<String, String>> = OnceLock::new();
    KEY.get_or_init(|| {
        let root = paths::repo_root();
        let read =
            |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
        let mut hash = Sha256::new();
        for file in [
            root.join("edge/wrangler.toml"),
            root.join("node_modules/wrangler/package.json"),
        ] {
            hash.update(read(&file)?);
        }
        let dir = root.join("edge/migrations");
        let mut migrations: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        migrations.sort();
        for m in migrations {
            hash.update(m.file_name().unwrap_or_default().as_encoded_bytes());
            hash.update([0]);
            hash.update(read(&m)?);
            hash.update([0]);
        }
        Ok(hash.finalize()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    })
    .clone()
}

/// The migrated template (a persist folder with only D1 in it), made when missing: into a
/// folder of this process's own, then renamed into place, so that test processes running at
/// once never see half of one.
fn template(wrangler: Wrangler) -> Result<PathBuf, String> {
    static TEMPLATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let dir = paths::target_dir().join("d1-template");
            let done = dir.join(template_key()?);
            if done.join(D1).is_dir() {
                return Ok(done);
            }
            let making = dir.join(format!("making-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&making); // a crashed process's, of the same id
            std::fs::create_dir_all(&making)
                .map_err(|e| format!("cannot create {}: {e}", making.display()))?;
            let made = apply(wrangler, &making, &making.join("persist"));
            // Only the database: wrangler's logs and config folders stay behind.
            let result = made.and_then(|()| {
                std::fs::rename(making.join("persist"), &done).or_else(|e| {
                    if done.join(D1).is_dir() {
                        Ok(()) // another process made it first
                    } else {
                        Err(format!("cannot rename into {}: {e}", done.display()))
                    }
                })
            });
            let _ = std::fs::remove_dir_all(&making);
            result.map(|()| done)
        })
        .clone()
}

/// Copies a folder tree; SQLite's shared-memory index (`-shm`) stays behind, as SQLite rebuilds
/// it from the database and its log when the first connection opens them.
fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
            copy_dir(&src, &dst)?;
        } else if !entry.file_name().to_string_lossy().ends_with("-shm") {
            std::fs::copy(&src, &dst)
                .map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}
