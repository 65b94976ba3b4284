//! The API's contract, fuzzed by a tool that is not ours: schemathesis reads `/api/openapi.json`
//! from the running stack and sends what the document allows and what it forbids, every check
//! on (no 5xx, answers and statuses as documented, schema-valid requests accepted and invalid
//! ones refused, undeclared methods refused with 405, authentication enforced), with a fresh
//! user's API token and the admin token. Its settings and the few answers no schema can foresee
//! are in `tests/contract/schemathesis.toml`; `cargo xtask test` installs the pinned `st`
//! (`tests/contract/requirements.lock`) and names it in `ONRAMP_SCHEMATHESIS`.

use onramp_tests::api::unique_email;
use onramp_tests::stack::{Stack, StackExtras, StackOptions};
use serde_json::json;
use std::process::Command;

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn schemathesis_finds_nothing_with_every_check() {
    let st = std::env::var_os("ONRAMP_SCHEMATHESIS").expect(
        "ONRAMP_SCHEMATHESIS names schemathesis's `st`: run the stack tests through `cargo xtask test`",
    );
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("contract-fuzz")
        },
        StackExtras::default(),
    )
    .expect("stack starts");
    // Verified, so what needs a verified email (saving an experiment) is fuzzed too.
    let user = stack.signup(&unique_email("fuzz"), "correct horse battery");
    let token = user.post("/api/tokens", &json!({"name": "contract fuzz"}));
    assert_eq!(token.status, 201, "{}", token.shown());
    let root = onramp_tests::paths::repo_root();
    let out = Command::new(st)
        .arg("--config-file")
        .arg(root.join("tests/contract/schemathesis.toml"))
        .arg("run")
        .arg(format!("{}/api/openapi.json", stack.url))
        .args(["--checks", "all", "--max-examples", "30", "--workers", "1"])
        .env("NO_COLOR", "1")
        .env(
            "ONRAMP_API_TOKEN",
            token.json["token"].as_str().unwrap_or_default(),
        )
        .env("ONRAMP_ADMIN_TOKEN", &stack.admin_token)
        // Its own cache of examples stays with this run, never in the checkout.
        .current_dir(&stack.state_dir)
        .output()
        .expect("st runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("SUMMARY"))
        .collect();
    println!("schemathesis:\n{}", summary.join("\n"));
    assert!(
        out.status.success(),
        "schemathesis found failures:\n{}\n{}",
        text.chars().take(6000).collect::<String>(),
        String::from_utf8_lossy(&out.stderr)
    );
}
