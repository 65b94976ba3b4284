//! A job's result folder as one tar archive, for `GET /jobs/{id}/checkpoint`: onramp-train
//! leaves a folder (a LoRA adapter's config and weights, or a whole model with its tokenizer),
//! and one download should carry all of it. Regular files only, in name order, under a top
//! folder; links and anything else are left out, so nothing outside the folder is read.

use std::path::Path;

/// The tar archive of every regular file under `dir`, named `<top>/<path inside dir>`.
pub fn tar_dir(dir: &Path, top: &str) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    let mut files = Vec::new();
    collect(dir, Path::new(top), &mut files)?;
    files.sort();
    for (inside, path) in files {
        let mut file = std::fs::File::open(&path)?;
        builder.append_file(&inside, &mut file)?;
    }
    builder.into_inner()
}

fn collect(
    dir: &Path,
    prefix: &Path,
    out: &mut Vec<(std::path::PathBuf, std::path::PathBuf)>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        // The entry's own type: a symlink is neither followed nor archived.
        let kind = entry.file_type()?;
        let inside = prefix.join(entry.file_name());
        if kind.is_dir() {
            collect(&entry.path(), &inside, out)?;
        } else if kind.is_file() {
            out.push((inside, entry.path()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn archives_every_file_under_the_top_folder_and_no_links() {
        let dir = std::env::temp_dir().join(format!("onramp-archive-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("adapter_config.json"), b"{\"r\": 8}")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("sub/weights.bin"), vec![7u8; 3000])
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/etc/hostname", dir.join("leak"))
            .unwrap_or_else(|e| panic!("{e}"));
        let bytes = tar_dir(&dir, "final").unwrap_or_else(|e| panic!("{e}"));
        let mut archive = tar::Archive::new(bytes.as_slice());
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap_or_else(|e| panic!("{e}")) {
            let mut entry = entry.unwrap_or_else(|e| panic!("{e}"));
            let name = entry
                .path()
                .unwrap_or_else(|e| panic!("{e}"))
                .display()
                .to_string();
            let mut data = Vec::new();
            entry
                .read_to_end(&mut data)
                .unwrap_or_else(|e| panic!("{e}"));
            seen.push((name, data.len()));
        }
        assert_eq!(
            seen,
            vec![
                ("final/adapter_config.json".to_string(), 8),
                ("final/sub/weights.bin".to_string(), 3000)
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
