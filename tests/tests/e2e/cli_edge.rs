//! The `onramp` CLI against `wrangler dev` and the real runner: log in (an API token saved
//! privately), see the balance, a refused spec sends nothing, submit once per idempotency key,
//! follow the logs to the end, list, cancel a running job, and clear messages for an unknown job
//! and for a caller who is not signed in.
//!
//! Needs the built stack (worker, runner, CLI) and `../shared`: ignored in a plain `cargo test`,
//! run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::unique_email;
use onramp_tests::paths;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const PASSWORD: &str = "correct horse battery";
const GRANT: i64 = 10_000;

fn tiny_spec(steps: u32) -> String {
    onramp_tests::specs::tiny_train(steps)
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `onramp ARGS` with its own config folder, `stdin` fed in, no inherited sign-in, in an
/// English locale.
fn onramp(config: &Path, args: &[&str], stdin: &str) -> Out {
    onramp_in("C.UTF-8", config, args, stdin)
}

/// `onramp` under the locale `lang` (its messages follow `LANG` unless `--lang` says otherwise).
fn onramp_in(lang: &str, config: &Path, args: &[&str], stdin: &str) -> Out {
    let mut child = Command::new(paths::cli_bin())
        .env("LANG", lang)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .args(args)
        .env("ONRAMP_CONFIG_DIR", config)
        .env_remove("ONRAMP_TOKEN")
        .env_remove("ONRAMP_EDGE")
        .env_remove("ONRAMP_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", paths::cli_bin().display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn job_id(submit: &Out) -> String {
    submit
        .stdout
        .strip_prefix("job ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no job id in {:?} / {:?}", submit.stdout, submit.stderr))
        .to_string()
}

#[test]
#[ignore = "needs the built stack and ../shared: run through `cargo xtask test`"]
fn the_cli_logs_in_submits_follows_lists_and_cancels() {
    let stack = Stack::start_with(
        StackOptions::for_test("cli-edge"),
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), GRANT.to_string())],
            extra_backends: Vec::new(),
        },
    )
    .expect("stack starts");
    let email = unique_email("cli");
    let web = stack.signup(&email, PASSWORD);
    let config = stack.state_dir.join("cli-config");
    let edge = stack.url.as_str();

    // Not signed in: a clear refusal that says how to sign in.
    let anon = onramp(&config, &["jobs", "--edge", edge], "");
    assert_eq!(anon.code, 1, "{}", anon.stderr);
    assert!(
        anon.stderr.contains("HTTP 401") && anon.stderr.contains("onramp login --email"),
        "{}",
        anon.stderr
    );

    // A wrong password is refused and saves nothing; the right one saves a private token.
    let wrong = onramp(
        &config,
        &["login", "--email", &email, "--edge", edge],
        "not the password\n",
    );
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    assert!(!config.join("credentials.json").exists());
    let login = onramp(
        &config,
        &["login", "--email", &email, "--edge", edge],
        &format!("{PASSWORD}\n"),
    );
    assert_eq!(login.code, 0, "{} {}", login.stdout, login.stderr);
    assert!(config.join("credentials.json").is_file());

    // From here on the saved sign-in says which edge: no --edge needed.
    let me = onramp(&config, &["me"], "");
    assert_eq!(me.code, 0, "{}", me.stderr);
    assert_eq!(
        me.stdout.trim(),
        format!("{email} on {edge}: balance ¥100.00")
    );
    // In Chinese from the locale, and from --lang over the locale.
    let zh = onramp_in("zh_CN.UTF-8", &config, &["me"], "");
    assert_eq!(zh.stdout.trim(), format!("{email}（{edge}）：余额 ¥100.00"));
    let en = onramp_in("zh_CN.UTF-8", &config, &["me", "--lang", "en"], "");
    assert!(en.stdout.contains("balance ¥100.00"), "{}", en.stdout);

    // A spec with an error is refused here, with its diagnostic, and nothing reaches the edge.
    let dir = stack.state_dir.join("specs");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        tiny_spec(20).replace("card = \"cpu\"", "card = \"cpux\""),
    )
    .unwrap();
    let refused = onramp(&config, &["submit", bad.to_str().unwrap()], "");
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("cpux") && refused.stderr.contains("nothing was sent"),
        "{}",
        refused.stderr
    );
    assert_eq!(web.get("/api/jobs").json["jobs"], serde_json::json!([]));

    // Submitting twice with one key gives one job.
    let good = dir.join("tiny.toml");
    std::fs::write(&good, tiny_spec(20)).unwrap();
    let key = random_hex(8);
    let first = onramp(
        &config,
        &["submit", good.to_str().unwrap(), "--key", &key],
        "",
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = job_id(&first);
    let again = onramp(
        &config,
        &["submit", good.to_str().unwrap(), "--key", &key],
        "",
    );
    assert_eq!(job_id(&again), id);
    assert_eq!(
        web.get("/api/jobs").json["jobs"].as_array().unwrap().len(),
        1
    );

    // Following the logs ends when the job does, with the training's own lines in them.
    let follow = onramp(&config, &["logs", &id, "--follow"], "");
    assert_eq!(follow.code, 0, "{}", follow.stderr);
    assert!(
        follow.stderr.contains(&format!("job {id} succeeded")),
        "{}",
        follow.stderr
    );
    assert!(
        follow.stdout.contains("tiny-train:") && follow.stdout.contains("\"loss\""),
        "{}",
        follow.stdout
    );
    let status = onramp(&config, &["status", &id], "");
    assert!(
        status.stdout.contains("state      succeeded"),
        "{}",
        status.stdout
    );
    let charged = web.get(&format!("/api/jobs/{id}")).json["charged_fen"]
        .as_i64()
        .unwrap();
    assert_eq!(web.balance(), GRANT - charged);

    // A long job is cancelled from the terminal once it runs.
    let long = dir.join("long.toml");
    std::fs::write(&long, tiny_spec(100_000)).unwrap();
    let second = onramp(&config, &["submit", long.to_str().unwrap()], "");
    assert_eq!(second.code, 0, "{}", second.stderr);
    let id2 = job_id(&second);
    onramp_tests::wait::until("the long job to run", Duration::from_secs(60), || {
        let j = web.get(&format!("/api/jobs/{id2}")).json;
        Ok((j["state"] == "running").then_some(()))
    })
    .unwrap();
    let cancel = onramp(&config, &["cancel", &id2], "");
    assert_eq!(cancel.code, 0, "{}", cancel.stderr);
    assert!(
        cancel.stdout.starts_with(&format!("job {id2} cancelled")),
        "{}",
        cancel.stdout
    );
    let zh_list = onramp(&config, &["jobs", "--lang", "zh"], "");
    assert!(zh_list.stdout.contains("实扣 ¥"), "{}", zh_list.stdout);
    let list = onramp(&config, &["jobs"], "");
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", list.stdout);
    assert!(lines[0].starts_with(&id2) && lines[0].contains("cancelled"));
    assert!(lines[1].starts_with(&id) && lines[1].contains("succeeded"));

    // Unknown jobs are the edge's 404, worded; logout forgets the token.
    let unknown = onramp(&config, &["status", "no-such-job"], "");
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("HTTP 404"), "{}", unknown.stderr);
    let out = onramp(&config, &["logout"], "");
    assert_eq!(out.code, 0);
    assert!(!config.join("credentials.json").exists());
}
