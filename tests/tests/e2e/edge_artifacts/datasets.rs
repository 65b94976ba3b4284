//! An account's datasets on the same stack: `onramp datasets upload` checks a file and sends it
//! in parts, an upload cut off resumes from the part the edge lacks, the same file again is the
//! stored one, the quota refuses with its name, another account's id is not found, a spec may
//! name only its own account's stored dataset, and the job fetches that dataset with its own
//! token (and no other job's).

use super::*;
use onramp_tests::paths;
use std::path::Path;

/// `onramp` with an API token of the account.
fn onramp(w: &World, token: &str, args: &[&str]) -> (bool, String, String) {
    let config = std::env::temp_dir().join(format!("onramp-datasets-cli-{}", random_hex(6)));
    let out = std::process::Command::new(paths::cli_bin())
        .args(args)
        .args(["--edge", &w.stack.url, "--lang", "en"])
        .env("ONRAMP_CONFIG_DIR", &config)
        .env("ONRAMP_TOKEN", token)
        .env_remove("ONRAMP_EDGE")
        .env_remove("ONRAMP_MODELS")
        .output()
        .expect("onramp runs");
    let _ = std::fs::remove_dir_all(&config);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An alpaca JSONL file of at least `bytes` bytes, its lines told apart by `seed`.
fn alpaca(bytes: usize, seed: &str) -> (Vec<u8>, u64) {
    let mut out = Vec::with_capacity(bytes + 200);
    let mut n = 0u64;
    while out.len() < bytes {
        n += 1;
        out.extend_from_slice(
            format!(
                "{{\"instruction\": \"Add {n} and {seed}.\", \"input\": \"\", \"output\": \"The sum of {n} and {seed} is known.\"}}\n"
            )
            .as_bytes(),
        );
    }
    (out, n)
}

fn token_of(c: &Client) -> String {
    c.post("/api/tokens", &json!({"name": "datasets"})).json["token"]
        .as_str()
        .unwrap()
        .to_string()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// Upload, resume, the same file twice, list, delete, and a file with bad lines refused.
pub(super) fn uploads(w: &World) {
    let owner = w.stack.signup(&unique_email("datasets"), PASSWORD);
    let token = token_of(&owner);
    // In the stack's state, which goes with the stack even when a check fails.
    let dir = w
        .stack
        .state_dir
        .join(format!("datasets-{}", random_hex(6)));
    std::fs::create_dir_all(&dir).unwrap();
    // 9 MiB: two parts of the default 8 MiB.
    let (file, lines) = alpaca(9 * MIB, "one");
    let path = write(&dir, "mine.jsonl", &file);
    // The first part goes up by hand and the connection "drops": the CLI sends only the rest.
    let declared = owner.post(
        "/api/datasets",
        &json!({"name": "mine.jsonl", "size": file.len(), "sha256": sha256(&file),
                "format": "alpaca", "examples": lines, "tokens": 1000}),
    );
    assert_eq!(declared.status, 200, "{}", declared.shown());
    assert_eq!(declared.json["parts"], 2, "{}", declared.shown());
    let id = declared.json["id"].as_str().unwrap().to_string();
    let first = owner.request(
        "PUT",
        &format!("/api/datasets/{id}?part=1"),
        Some(file[..8 * MIB].to_vec()),
        &[("content-type", "application/octet-stream")],
    );
    assert_eq!(first.json["received"], 1, "{}", first.shown());
    let (ok, out, err) = onramp(w, &token, &["datasets", "upload", &path]);
    assert!(ok, "{out}{err}");
    assert!(
        err.contains("sent 1 of 2 parts (1 already stored)"),
        "{err}"
    );
    // What a spec needs to name it and train on it by epochs.
    assert!(
        out.starts_with(&id)
            && out.contains(&format!(
                "[data]\ndataset = \"{id}\"\nexamples = {lines}\ntokens = "
            )),
        "{out}"
    );
    let got = owner.get(&format!("/api/datasets/{id}"));
    assert_eq!(
        (
            got.json["complete"].as_bool(),
            got.json["examples"].as_u64()
        ),
        (Some(true), Some(lines)),
        "{}",
        got.shown()
    );
    // The same file again, under another name, is the stored one: nothing is sent twice.
    let again = write(&dir, "copy.jsonl", &file);
    let (ok, out, err) = onramp(w, &token, &["datasets", "upload", &again, "--json"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("sent 0 of 2 parts (2 already stored)"),
        "{err}"
    );
    let d: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (d["id"].as_str(), d["name"].as_str()),
        (Some(id.as_str()), Some("mine.jsonl"))
    );
    let list = owner.get("/api/datasets").json;
    assert_eq!(list["datasets"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["used_bytes"], file.len(), "{list}");
    submitted_by_epochs(w, &owner, &token, &dir, &id, lines);
    bad_lines(w, &owner, &token, &dir);
    let (ok, out, err) = onramp(w, &token, &["datasets", "rm", &id]);
    assert!(ok && out.contains("freed"), "{out}{err}");
    assert_eq!(owner.get(&format!("/api/datasets/{id}")).status, 404);
    let (ok, _, err) = onramp(w, &token, &["datasets", "rm", "../api/me"]);
    assert!(!ok && err.contains("no dataset id"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file with a bad line is refused before anything is sent, unless the user says so.
fn bad_lines(w: &World, owner: &Client, token: &str, dir: &Path) {
    let token = token.to_string();
    let mut bad = alpaca(1000, "two").0;
    bad.extend_from_slice(b"{\"instruction\": \"x\"}\n");
    let bad_path = write(dir, "bad.jsonl", &bad);
    let (ok, _, err) = onramp(w, &token, &["datasets", "upload", &bad_path]);
    assert!(
        !ok && err.contains("--skip-bad-lines") && err.contains("line 12"),
        "{err}"
    );
    assert_eq!(
        owner.get("/api/datasets").json["datasets"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let (ok, _, err) = onramp(
        w,
        &token,
        &["datasets", "upload", &bad_path, "--skip-bad-lines"],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = onramp(w, &token, &["datasets", "list"]);
    assert!(
        ok && out.contains("bad.jsonl") && out.contains("mine.jsonl"),
        "{out}{err}"
    );
}

/// The quota, declarations refused field by field, and an unverified account.
pub(super) fn refusals(w: &World) {
    let owner = w.stack.signup(&unique_email("datasets-quota"), PASSWORD);
    let declare = |size: usize, sha: &str, format: &str| {
        owner.post(
            "/api/datasets",
            &json!({"name": "d.jsonl", "size": size, "sha256": sha,
                    "format": format, "examples": 10, "tokens": 100}),
        )
    };
    assert_eq!(declare(30 * MIB, &"1".repeat(64), "chat").status, 200);
    let refused = declare(20 * MIB, &"2".repeat(64), "chat");
    assert_eq!(
        (refused.status, refused.code()),
        (409, "limit_reached"),
        "{}",
        refused.shown()
    );
    let d = &refused.json["error"]["details"];
    assert_eq!(
        (d["limit"].as_str(), d["quota_bytes"].as_u64()),
        (Some("dataset_bytes"), Some(DATASET_QUOTA as u64))
    );
    let bad = declare(MIB, &"3".repeat(64), "csv");
    assert_eq!(
        (bad.status, bad.json["error"]["details"]["field"].as_str()),
        (400, Some("format"))
    );
    let bad = declare(MIB, "xyz", "chat");
    assert_eq!(bad.status, 400, "{}", bad.shown());
    // Parts past 16 MiB would send the first one to R2 unchecked.
    let big_parts = owner.post(
        "/api/datasets",
        &json!({"name": "d.jsonl", "size": 40 * MIB, "sha256": "5".repeat(64), "format": "chat",
                "examples": 10, "tokens": 100, "part_size": 32 * MIB}),
    );
    assert_eq!(
        (
            big_parts.status,
            big_parts.json["error"]["details"]["field"].as_str()
        ),
        (400, Some("part_size")),
        "{}",
        big_parts.shown()
    );
    // The unfinished upload counts until it is deleted.
    let id = api::datasets::dataset_id(&"1".repeat(64));
    let gone = owner.request("DELETE", &format!("/api/datasets/{id}"), None, &[]);
    assert_eq!(gone.json["freed_bytes"], 30 * MIB, "{}", gone.shown());
    assert_eq!(
        declare(20 * MIB, &"2".repeat(64), "chat").status,
        200,
        "room again"
    );
    // The cron sweep leaves an upload declared today: it goes only after DATASET_UPLOAD_RETENTION.
    w.stack.run_scheduled("*/5 * * * *").unwrap();
    let id2 = api::datasets::dataset_id(&"2".repeat(64));
    let kept = owner.get(&format!("/api/datasets/{id2}"));
    assert_eq!(
        (kept.status, kept.json["received"].as_u64()),
        (200, Some(0)),
        "{}",
        kept.shown()
    );
    let unverified = Client::signup(&w.stack.url, &unique_email("datasets-unverified"), PASSWORD);
    let a = unverified.post(
        "/api/datasets",
        &json!({"name": "d.jsonl", "size": 10, "sha256": "4".repeat(64),
                "format": "chat", "examples": 1, "tokens": 10}),
    );
    assert_eq!(a.code(), "email_not_verified", "{}", a.shown());
    belied(&owner);
}

/// Declarations the file's first part belies, re-read by the edge: another format, more
/// examples than it holds, another SHA-256. Each is refused naming the field, and withdrawn:
/// nothing of it is kept.
fn belied(owner: &Client) {
    let (file, lines) = alpaca(2000, "belied");
    let sha = sha256(&file);
    let put_first = |format: &str, examples: u64, sha: &str| {
        let d = owner.post(
            "/api/datasets",
            &json!({"name": "b.jsonl", "size": file.len(), "sha256": sha,
                    "format": format, "examples": examples, "tokens": 500}),
        );
        assert_eq!(d.status, 200, "{}", d.shown());
        let id = d.json["id"].as_str().unwrap().to_string();
        let put = owner.request(
            "PUT",
            &format!("/api/datasets/{id}?part=1"),
            Some(file.clone()),
            &[("content-type", "application/octet-stream")],
        );
        (id, put)
    };
    for (format, examples, sha, field) in [
        ("chat", lines, sha.clone(), "format"),
        ("alpaca", lines + 1, sha.clone(), "examples"),
        ("alpaca", lines, "5".repeat(64), "sha256"),
    ] {
        let (id, put) = put_first(format, examples, &sha);
        assert_eq!(
            (put.status, put.json["error"]["details"]["field"].as_str()),
            (400, Some(field)),
            "{}",
            put.shown()
        );
        assert!(put.shown().contains("withdrawn"), "{}", put.shown());
        assert_eq!(owner.get(&format!("/api/datasets/{id}")).status, 404);
    }
    // The truth is stored.
    let (id, put) = put_first("alpaca", lines, &sha);
    assert_eq!(put.json["complete"], true, "{}", put.shown());
    assert_eq!(owner.get(&format!("/api/datasets/{id}")).status, 200);
}

/// A stored dataset of one account, named in the specs of that account and another; the job
/// fetches it with its token, checked by its sha256.
pub(super) fn named_in_a_spec(w: &World) {
    let owner = w.stack.signup(&unique_email("datasets-spec"), PASSWORD);
    let (file, lines) = alpaca(64 * 1024, "three");
    let sha = sha256(&file);
    let a = owner.post(
        "/api/datasets",
        &json!({"name": "s.jsonl", "size": file.len(), "sha256": sha,
                "format": "alpaca", "examples": lines, "tokens": 9000}),
    );
    let id = a.json["id"].as_str().unwrap().to_string();
    let spec = LORA.replace("dataset = \"alpaca-zh\"", &format!("dataset = \"{id}\""));
    assert_ne!(spec, LORA);
    // Still uploading: refused, and no money moves.
    let before = owner.balance();
    let early = owner.submit_spec(&spec, &random_hex(8));
    assert_eq!(
        (
            early.status,
            early.json["error"]["details"]["field"].as_str()
        ),
        (400, Some("data.dataset")),
        "{}",
        early.shown()
    );
    assert_eq!(owner.balance(), before);
    let put = owner.request(
        "PUT",
        &format!("/api/datasets/{id}?part=1"),
        Some(file.clone()),
        &[("content-type", "application/octet-stream")],
    );
    assert_eq!(put.json["complete"], true, "{}", put.shown());
    // Another account cannot see it, delete it or train on it.
    let other = w.stack.signup(&unique_email("datasets-other"), PASSWORD);
    assert_eq!(other.get(&format!("/api/datasets/{id}")).status, 404);
    assert_eq!(
        other
            .request("DELETE", &format!("/api/datasets/{id}"), None, &[])
            .status,
        404
    );
    let theirs = other.submit_spec(&spec, &random_hex(8));
    assert_eq!(theirs.status, 400, "{}", theirs.shown());
    assert!(
        theirs.shown().contains("no dataset of this account"),
        "{}",
        theirs.shown()
    );
    // The owner's job fetches it with its own token; another job's token is refused.
    let job = w.submitted(&owner, &spec);
    // The spec gives tokens as if the data were packed; the edge adds the examples the check
    // counted, so that its epochs are examples over the batch (and keeps the tokens given).
    let stored = owner.get(&format!("/api/jobs/{}", job.id));
    let stored = stored.json["spec"].as_str().unwrap_or_default().to_string();
    assert!(stored.contains(&format!("examples = {lines}")), "{stored}");
    assert!(stored.contains("tokens = 20_000_000"), "{stored}");
    let steps = |toml: &str| jobspec::plan_toml(toml).valid.expect("valid").steps();
    let by_examples = spec.replace(
        "tokens = 20_000_000",
        &format!("examples = {lines}\ntokens = 20_000_000"),
    );
    assert_eq!(steps(&stored), steps(&by_examples));
    assert!(steps(&stored) < steps(&spec), "{stored}");
    let fetched = job.job.get(&format!("/api/jobs/{}/dataset", job.id));
    assert_eq!(fetched.status, 200, "{}", fetched.shown());
    assert_eq!(fetched.header("x-onramp-sha256"), Some(sha.as_str()));
    assert!(fetched.bytes == file, "the job fetched the file");
    let stranger = w.job("datasets-stranger");
    let a = stranger.job.get(&format!("/api/jobs/{}/dataset", job.id));
    assert!(matches!(a.status, 401 | 403), "{}", a.shown());
    let none = stranger
        .job
        .get(&format!("/api/jobs/{}/dataset", stranger.id));
    assert_eq!(none.status, 404, "{}", none.shown());
}

/// A spec training on the uploaded dataset `id` (`lines` examples) by epochs, its counts left
/// out: `onramp submit` takes them from the account's record, checks the spec with them, and
/// the job's epochs are its examples.
fn submitted_by_epochs(w: &World, owner: &Client, token: &str, dir: &Path, id: &str, lines: u64) {
    let spec = LORA
        .replace("dataset = \"alpaca-zh\"", &format!("dataset = \"{id}\""))
        .replace("tokens = 20_000_000      # tokens in one epoch\n", "");
    assert!(!spec.contains("tokens ="), "{spec}");
    let spec_path = write(dir, "by-epochs.toml", spec.as_bytes());
    let (ok, out, err) = onramp(w, token, &["submit", &spec_path, "--json"]);
    assert!(ok, "{out}{err}");
    let job: Value = serde_json::from_str(&out).unwrap();
    let job = owner.get(&format!("/api/jobs/{}", job["id"].as_str().unwrap()));
    let stored = job.json["spec"].as_str().unwrap_or_default();
    assert!(
        stored.contains(&format!("examples = {lines}")) && stored.contains("tokens = "),
        "{stored}"
    );
}

/// The owner's stored dataset of `file` (declared, then sent in one part); its id.
fn stored(owner: &Client, file: &[u8], lines: u64) -> String {
    let a = owner.post(
        "/api/datasets",
        &json!({"name": "e.jsonl", "size": file.len(), "sha256": sha256(file),
                "format": "alpaca", "examples": lines, "tokens": 900}),
    );
    let id = a.json["id"].as_str().unwrap().to_string();
    let put = owner.request(
        "PUT",
        &format!("/api/datasets/{id}?part=1"),
        Some(file.to_vec()),
        &[("content-type", "application/octet-stream")],
    );
    assert_eq!(put.json["complete"], true, "{}", put.shown());
    id
}

/// An eval set of its own uploaded (`eval.dataset = "ds_…"`): another account's is refused at
/// `eval.dataset` before money moves; the job's token fetches the one its spec names by `?id=`
/// (and its training set without), nothing else.
pub(super) fn an_eval_set_uploaded(w: &World) {
    let owner = w.stack.signup(&unique_email("datasets-eval"), PASSWORD);
    let (train, n) = alpaca(16 * 1024, "train");
    let (eval, m) = alpaca(4 * 1024, "eval");
    let (train_id, eval_id) = (stored(&owner, &train, n), stored(&owner, &eval, m));
    let other = w
        .stack
        .signup(&unique_email("datasets-eval-other"), PASSWORD);
    let theirs = stored(&other, &alpaca(4 * 1024, "theirs").0, 20);
    let spec = |eval: &str| {
        LORA.replace(
            "dataset = \"alpaca-zh\"",
            &format!("dataset = \"{train_id}\""),
        ) + &format!("\n[eval]\ndataset = \"{eval}\"\n")
    };
    let before = owner.balance();
    let refused = owner.submit_spec(&spec(&theirs), &random_hex(8));
    assert_eq!(
        (
            refused.status,
            refused.json["error"]["details"]["field"].as_str()
        ),
        (400, Some("eval.dataset")),
        "{}",
        refused.shown()
    );
    assert!(
        refused.shown().contains("no dataset of this account"),
        "{}",
        refused.shown()
    );
    assert_eq!(owner.balance(), before);

    let job = w.submitted(&owner, &spec(&eval_id));
    let url = format!("/api/jobs/{}/dataset", job.id);
    let fetched = job.job.get(&format!("{url}?id={eval_id}"));
    assert_eq!(fetched.status, 200, "{}", fetched.shown());
    assert_eq!(
        fetched.header("x-onramp-sha256"),
        Some(sha256(&eval).as_str())
    );
    assert!(fetched.bytes == eval, "the job fetched its eval set");
    assert!(
        job.job.get(&url).bytes == train,
        "without ?id=, its training set"
    );
    assert!(job.job.get(&format!("{url}?id={train_id}")).bytes == train);
    for not_named in [theirs.as_str(), "ds_zz", "../x"] {
        let a = job.job.get(&format!("{url}?id={not_named}"));
        assert_eq!(a.status, 404, "{not_named}: {}", a.shown());
    }
}
