//! What tiny-train needs besides the code: llama2.c models and tokenizers (`models/`) and text
//! corpora (`data/`). The runner copies them from the shared reference data (`ONRAMP_SHARED`, or
//! `../shared` beside the repository) into its state folder when it starts, so that jobs never
//! read outside the runner's own folders and nothing is committed to the repository.

use std::path::{Path, PathBuf};

/// The files copied in when present: (folder, file name).
pub const SHARED_FILES: &[(&str, &str)] = &[
    ("models", "stories260K.bin"),
    ("models", "tok512.bin"),
    // The same tokenizer as SentencePiece, for onramp-train's models built from their numbers.
    ("models", "tok512.model"),
    ("models", "tokenizer.bin"),
    ("data", "tinyshakespeare.txt"),
];

/// The dataset a spec gets when it names none of its own.
pub const DEFAULT_DATASET: &str = "tinyshakespeare";

/// A folder laid out as `models/<id>.bin`, `models/tok<vocab>.bin`, `data/<dataset>.txt` — the
/// shared reference folder itself has this layout, so it can serve directly.
#[derive(Debug, Clone, PartialEq)]
pub struct Assets {
    pub root: PathBuf,
    /// The operator's benchmark tasks (`--eval-tasks`): lm-evaluation-harness task YAMLs and
    /// their local data (`dataset_path: json` and the like), which jobs read, offline.
    pub eval_tasks: Option<PathBuf>,
}

impl Assets {
    /// The shared reference data: `ONRAMP_SHARED`, else `../shared` beside the repository.
    pub fn shared_default() -> PathBuf {
        match std::env::var_os("ONRAMP_SHARED") {
            Some(p) => PathBuf::from(p),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
        }
    }

    /// Copies the shared files that exist into `<state_dir>/assets` (only those that changed) and
    /// returns the copy with the list of files that were missing.
    pub fn install(shared: &Path, state_dir: &Path) -> Result<(Assets, Vec<String>), String> {
        let root = state_dir.join("assets");
        let mut missing = Vec::new();
        for (folder, name) in SHARED_FILES {
            let src = shared.join(folder).join(name);
            let dest_dir = root.join(folder);
            let dest = dest_dir.join(name);
            let Ok(meta) = std::fs::metadata(&src) else {
                missing.push(src.display().to_string());
                continue;
            };
            let same = std::fs::metadata(&dest).is_ok_and(|d| d.len() == meta.len());
            if same {
                continue;
            }
            std::fs::create_dir_all(&dest_dir)
                .map_err(|e| format!("cannot create {}: {e}", dest_dir.display()))?;
            // Copy to a temp name first so a crash never leaves a truncated model in place.
            let tmp = dest.with_extension("part");
            std::fs::copy(&src, &tmp)
                .and_then(|_| std::fs::rename(&tmp, &dest))
                .map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), dest.display()))?;
        }
        Ok((
            Assets {
                root,
                eval_tasks: None,
            },
            missing,
        ))
    }

    /// The llama2.c checkpoint of a catalogue model, when this runner has it.
    pub fn model(&self, id: &str) -> Option<PathBuf> {
        let p = self.root.join("models").join(format!("{id}.bin"));
        p.is_file().then_some(p)
    }

    /// The tokenizer for a vocabulary size: llama2.c's `tok<N>.bin`, or Llama 2's 32000-token
    /// `tokenizer.bin`.
    pub fn tokenizer(&self, vocab: usize) -> Option<PathBuf> {
        let name = if vocab == 32000 {
            "tokenizer.bin".to_string()
        } else {
            format!("tok{vocab}.bin")
        };
        let p = self.root.join("models").join(name);
        p.is_file().then_some(p)
    }

    /// A corpus by dataset id (`data/<id>.txt` or `data/<id>`). Ids are plain names: a path is
    /// never resolved here, so a spec cannot make the runner read arbitrary files.
    pub fn dataset(&self, id: &str) -> Option<PathBuf> {
        let plain = !id.is_empty()
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !id.starts_with('.');
        if !plain {
            return None;
        }
        let data = self.root.join("data");
        [data.join(format!("{id}.txt")), data.join(id)]
            .into_iter()
            .find(|p| p.is_file())
    }

    /// The dataset ids available, for error messages.
    pub fn dataset_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(self.root.join("data"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.strip_suffix(".txt").unwrap_or(&name).to_string()
                    })
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_what_exists_and_resolves_plain_ids_only() {
        let tmp = std::env::temp_dir().join(format!("runner-assets-{}", std::process::id()));
        let shared = tmp.join("shared");
        std::fs::create_dir_all(shared.join("data")).unwrap();
        std::fs::create_dir_all(shared.join("models")).unwrap();
        std::fs::write(shared.join("data/tinyshakespeare.txt"), "to be").unwrap();
        std::fs::write(shared.join("models/tok512.bin"), "tok").unwrap();
        let (assets, missing) = Assets::install(&shared, &tmp.join("state")).unwrap();
        assert_eq!(missing.len(), 3, "{missing:?}");
        assert!(assets.dataset("tinyshakespeare").is_some());
        assert_eq!(assets.dataset_ids(), vec!["tinyshakespeare"]);
        assert!(
            assets
                .dataset("../shared/data/tinyshakespeare.txt")
                .is_none()
        );
        assert!(assets.dataset("/etc/passwd").is_none());
        assert!(assets.tokenizer(512).is_some());
        assert!(assets.tokenizer(32000).is_none());
        assert!(assets.model("stories260K").is_none());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
