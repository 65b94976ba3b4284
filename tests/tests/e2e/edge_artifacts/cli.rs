//! `onramp artifacts` against the stack: the list (and its JSON), a download cut off and
//! resumed from its `.part` file, a `.part` that does not match caught by the sha256, delete.

use super::*;
use onramp_tests::paths;

/// `onramp artifacts` with an API token of the job's owner.
fn onramp(w: &World, token: &str, args: &[&str]) -> (bool, String, String) {
    let config = std::env::temp_dir().join(format!("onramp-artifacts-cli-{}", random_hex(6)));
    let out = std::process::Command::new(paths::cli_bin())
        .args(args)
        .args(["--edge", &w.stack.url, "--lang", "en"])
        .env("ONRAMP_CONFIG_DIR", &config)
        .env("ONRAMP_TOKEN", token)
        .env_remove("ONRAMP_EDGE")
        .output()
        .expect("onramp runs");
    let _ = std::fs::remove_dir_all(&config);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(super) fn cli(w: &World) {
    let j = w.job("cli");
    let part = 5 * MIB;
    let file = data(3 * part + 77, 8);
    let name = "merged/model.safetensors";
    assert_eq!(j.start(name, &file, Some(part)).status, 200);
    j.parts(name, &file, part, 1, 4);
    assert_eq!(j.start("log.txt", b"hello\n", None).status, 200);
    j.part("log.txt", 1, b"hello\n");
    let token = j.owner.post("/api/tokens", &json!({"name": "cli"})).json["token"]
        .as_str()
        .unwrap()
        .to_string();

    let (ok, out, err) = onramp(w, &token, &["artifacts", &j.id, "--json"]);
    assert!(ok, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let first = &listed["artifacts"][1];
    assert_eq!(
        (first["name"].as_str(), first["size"].as_u64()),
        (Some(name), Some(file.len() as u64))
    );
    assert_eq!(first["sha256"], sha256(&file));
    assert_eq!(first["url"], j.path(name));
    let (ok, out, _) = onramp(w, &token, &["artifacts", &j.id]);
    assert!(
        ok && out.contains(name) && out.contains("15.0 MiB"),
        "{out}"
    );

    // A download cut off after 7 MiB resumes from there (its hidden part file, named after
    // the file's sha256), and is checked.
    let dir = std::env::temp_dir().join(format!("onramp-artifacts-dl-{}", random_hex(6)));
    std::fs::create_dir_all(dir.join("merged")).unwrap();
    let part_of = |name: &str, sha: &str| {
        let (folder, file) = name.rsplit_once('/').unwrap_or(("", name));
        dir.join(folder)
            .join(format!(".{file}.{}.part", &sha[..16]))
    };
    let model_part = part_of(name, &sha256(&file));
    std::fs::write(&model_part, &file[..7 * MIB]).unwrap();
    let d = dir.to_str().unwrap();
    let (ok, out, err) = onramp(w, &token, &["artifacts", "download", &j.id, name, "-o", d]);
    assert!(ok, "{out}{err}");
    assert_eq!(std::fs::read(dir.join(name)).unwrap(), file);
    assert!(!model_part.exists());
    // A part file that does not match what the edge has is caught by the sha256, and removed.
    std::fs::write(part_of("log.txt", &sha256(b"hello\n")), b"HELL").unwrap();
    let (ok, _, err) = onramp(
        w,
        &token,
        &["artifacts", "download", &j.id, "log.txt", "-o", d],
    );
    assert!(!ok && err.contains("sha256"), "{err}");
    kept_unless_forced(w, &token, &j.id, &dir, (name, &file));
    let (ok, _, err) = onramp(
        w,
        &token,
        &["artifacts", "download", &j.id, "nope.bin", "-o", d],
    );
    assert!(!ok && err.contains("no artifact"), "{err}");

    let (ok, out, err) = onramp(w, &token, &["artifacts", "delete", &j.id, "log.txt"]);
    assert!(ok && out.contains("deleted log.txt"), "{out}{err}");
    assert_eq!(j.download("log.txt", None).status, 404);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file of the user's own at an artifact's name is kept unless --force says otherwise; one
/// already downloaded (`name`, with its bytes) is left as it is.
fn kept_unless_forced(
    w: &World,
    token: &str,
    job: &str,
    dir: &std::path::Path,
    (name, file): (&str, &[u8]),
) {
    let d = dir.to_str().unwrap();
    std::fs::write(dir.join("log.txt"), b"my own notes\n").unwrap();
    let (ok, _, err) = onramp(w, token, &["artifacts", "download", job, "-o", d]);
    assert!(!ok && err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read(dir.join("log.txt")).unwrap(),
        b"my own notes\n"
    );
    let (ok, _, err) = onramp(
        w,
        token,
        &["artifacts", "download", job, "-o", d, "--force"],
    );
    assert!(ok, "{err}");
    assert_eq!(std::fs::read(dir.join("log.txt")).unwrap(), b"hello\n");
    assert_eq!(std::fs::read(dir.join(name)).unwrap(), file);
}
