//! Copies the reference models from `../shared/models` into the served assets, verifying each
//! file's sha256 against the published checksums (see `../shared/models/README.md`).

use sha2::{Digest, Sha256};
use std::path::Path;

/// The files the app serves, with their published checksums.
pub const MODELS: &[(&str, &str)] = &[
    (
        "stories260K.bin",
        "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696",
    ),
    (
        "tok512.bin",
        "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312",
    ),
    (
        "tokenizer.bin",
        "50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361",
    ),
];

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Copies every model into `dest`, refusing any whose checksum differs.
pub fn copy_verified(shared_models: &Path, dest: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
    for (name, expected) in MODELS {
        let src = shared_models.join(name);
        let bytes =
            std::fs::read(&src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
        let got = sha256_hex(&bytes);
        if got != *expected {
            return Err(format!(
                "{} has sha256 {got}, expected {expected}: refusing to serve it",
                src.display()
            ));
        }
        let out = dest.join(name);
        if std::fs::read(&out).ok().as_deref() != Some(&bytes[..]) {
            std::fs::write(&out, &bytes)
                .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_file_whose_checksum_differs() {
        let dir = std::env::temp_dir().join(format!("xtask-models-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        for (name, _) in MODELS {
            std::fs::write(src.join(name), b"not the model").unwrap();
        }
        let err = copy_verified(&src, &dir.join("out")).unwrap_err();
        assert!(err.contains("stories260K.bin has sha256"), "{err}");
        assert!(!dir.join("out/stories260K.bin").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
