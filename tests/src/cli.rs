//! The terminal client against a running stack, as a user runs it.

use crate::stack::Stack;

/// `onramp ARGS` against the stack, signed in as `u` with a fresh API token (a test's helper:
/// it panics when the edge gives no token or the CLI cannot start).
pub fn onramp(stack: &Stack, u: &crate::api::Client, args: &[&str]) -> std::process::Output {
    let made = u.post("/api/tokens", &serde_json::json!({"name": "cli"}));
    let Some(token) = made.json["token"].as_str().map(str::to_string) else {
        panic!("no API token: {:?}", made.json);
    };
    let config = std::env::temp_dir().join(format!("onramp-cli-{}", crate::stack::random_hex(6)));
    let out = std::process::Command::new(crate::paths::cli_bin())
        .args(args)
        .args(["--edge", &stack.url, "--lang", "en"])
        .env("ONRAMP_CONFIG_DIR", &config)
        .env("ONRAMP_TOKEN", &token)
        .env_remove("ONRAMP_EDGE")
        .output()
        .expect("onramp runs");
    let _ = std::fs::remove_dir_all(&config);
    out
}

/// `onramp datasets upload` of the shared tinyshakespeare corpus, as a user uploads their
/// text: the stored dataset's id (a test's helper: it panics when the upload fails).
pub fn upload_corpus(stack: &Stack, u: &crate::api::Client) -> String {
    // The play with a heading that starts like a JSON array: a `.txt` file is text whatever it
    // starts with, to the checker that counts it and to the trainer that reads it (the file in
    // the job's folder is named by its id; the edge names the extension it was declared with).
    let play = std::fs::read(crate::paths::shared_dir().join("data/tinyshakespeare.txt"))
        .expect("the shared corpus");
    let corpus = stack.state_dir.join("corpus.txt");
    std::fs::write(&corpus, [&b"[ACT I]\n"[..], &play].concat()).expect("the corpus written");
    let out = onramp(
        stack,
        u,
        &[
            "datasets",
            "upload",
            corpus.to_str().expect("a UTF-8 path"),
            "--seq-len",
            "64",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        (d["format"].as_str(), d["complete"].as_bool()),
        (Some("text"), Some(true)),
        "{d}"
    );
    d["id"].as_str().expect("an id").to_string()
}
