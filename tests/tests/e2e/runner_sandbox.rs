//! A job on the runner tries what a hostile job would, against the real `onramp-runner` in its
//! sandbox (`runner/src/sandbox.rs`): read the runner's secret (its file, the runner's process),
//! another job's folder, record and environment, and the state folder; undo the sandbox; write
//! to the shared assets or to anything else the runner's user owns (as it owns the code later
//! jobs run); reach the machine's shared memory; read the machine's disks (a runner started as
//! root runs its jobs as uid 0, which owns their device files). It gets none of them, and still
//! works in its own folder, writes its temporary files and uses `/dev/null` and `/dev/urandom`.
//! The same attempts without the sandbox (`--sandbox off`) get them, so the test can fail.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::runner::TestRunner;
use onramp_tests::stack::random_hex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

fn command_job(job_id: &str, script: &str, env: Value) -> Value {
    json!({"job_id": job_id, "task": "command", "spec_toml": "",
           "command": ["sh", "-c", script], "env": env, "time_limit_s": 120,
           "report_url": null, "report_token": null})
}

/// What the prober found, one `key=value` line per attempt: `got` where it read what it must
/// not, `refused` where it could not.
const PROBE: &str = r#"
state=$1 other=$2 outside=$3
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name=got"; else echo "$name=refused"; fi; }
try secret-file cat "$state/secret"
try other-folder cat "$other/mine.txt"
try other-record cat "$state/records/$(basename "$other").json"
try state-listing sh -c "ls -a '$state' | grep -qv -e '^\.' -e '^jobs$' -e '^assets$'"
try jobs-listing sh -c "ls -a '$state/jobs' | grep -qv -e '^\.' -e \"^$(basename "$PWD")\$\""
try other-environ sh -c "cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -q '^VICTIM_TOKEN='"
try runner-process sh -c "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' | grep -q -- '--secret-fil[e]'"
try unmount umount "$state"
try assets-write sh -c "echo x > '$state/assets/planted'"
try record-write sh -c "echo '{}' > '$state/records/$(basename "$PWD").json'"
try assets-read ls "$state/assets/models"
try outside-write sh -c "echo x > '$outside/planted'"
try shm-shared sh -c "ls /dev/shm/onramp-sandbox-test-*"
try disk-device sh -c 'for d in $(find /dev -type b); do head -c 512 "$d" && exit 0; done; exit 1'
try std-devices sh -c 'echo x > /dev/null && head -c 4 /dev/urandom | wc -c | grep -qx 4 && ls /dev/fd/0'
try own-write sh -c 'echo mine > own.txt && cat own.txt'
try own-temp sh -c 'f=$(mktemp) && echo mine > "$f" && cat "$f"'
"#;

/// Runs the victim (alive, with a token in its environment and a file in its folder) and the
/// prober beside it; the prober's findings by attempt, and its log.
fn probe(r: &TestRunner) -> (BTreeMap<String, String>, String) {
    let token = random_hex(12);
    let victim = r
        .submit(&command_job(
            "edge-victim",
            "echo private > mine.txt; exec sleep 120",
            json!({"VICTIM_TOKEN": token}),
        ))
        .unwrap();
    r.wait_state(&victim, Duration::from_secs(20), |s| s == "running")
        .unwrap();
    let state = r.state_dir.join("state");
    let other = r.job_dir(&victim);
    onramp_tests::wait::until("the victim's file", Duration::from_secs(20), || {
        Ok(other.join("mine.txt").is_file().then_some(()))
    })
    .unwrap();
    // Outside the state folder but the runner's own (as the runner's binary and the trainer's
    // code and environment are), and a file in the machine's shared memory.
    let outside = r.state_dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let shm = std::path::PathBuf::from(format!("/dev/shm/onramp-sandbox-test-{}", random_hex(6)));
    std::fs::write(&shm, b"host").unwrap();
    let script = format!(
        "set -- '{}' '{}' '{}'\n{PROBE}",
        state.display(),
        other.display(),
        outside.display()
    );
    let prober = r
        .submit(&command_job("edge-prober", &script, json!({})))
        .unwrap();
    let v = r
        .wait_state(&prober, Duration::from_secs(30), |s| {
            !matches!(s, "queued" | "running")
        })
        .unwrap();
    assert_eq!(v["state"], "succeeded", "{v}\n{}", r.log());
    let (status, _) = r.post(&format!("/jobs/{victim}/cancel"), &json!({}));
    assert_eq!(status, 200);
    let log = r.read_log(&prober).unwrap();
    let _ = std::fs::remove_file(&shm);
    assert!(!log.contains(&token), "{log}");
    let found = log
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(
        r.job_dir(&prober).join("own.txt").is_file(),
        "the job's own folder is its own: {log}"
    );
    (found, log)
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn a_sandboxed_job_sees_only_its_own_folder_and_the_assets() {
    let r = TestRunner::start_with("runner-sandbox", &["--cards", "2", "--sandbox", "on"]).unwrap();
    assert!(r.log().contains("jobs run in a sandbox"), "{}", r.log());
    assert_eq!(r.get("/health").1["sandbox"], true);
    let (found, log) = probe(&r);
    for attempt in [
        "secret-file",
        "other-folder",
        "other-record",
        "state-listing",
        "jobs-listing",
        "other-environ",
        "runner-process",
        "unmount",
        "assets-write",
        "record-write",
        "outside-write",
        "shm-shared",
        "disk-device",
    ] {
        assert_eq!(
            found.get(attempt).map(String::as_str),
            Some("refused"),
            "{attempt}: {log}"
        );
    }
    assert_eq!(found["assets-read"], "got", "{log}");
    assert_eq!(found["own-write"], "got", "{log}");
    assert_eq!(found["own-temp"], "got", "{log}");
    assert_eq!(found["std-devices"], "got", "{log}");
    assert!(
        !log.contains(&r.secret) && !log.contains("private"),
        "{log}"
    );
    assert!(!r.state_dir.join("state/assets/planted").exists());
}

/// The probe sees what it looks for where nothing hides it: without the sandbox it gets it all.
#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn without_the_sandbox_the_same_job_reads_everything() {
    let r =
        TestRunner::start_with("runner-no-sandbox", &["--cards", "2", "--sandbox", "off"]).unwrap();
    assert!(r.log().contains("without a sandbox"), "{}", r.log());
    // The operator sees it in the runner's health (and the edge's admin health quotes it).
    assert_eq!(r.get("/health").1["sandbox"], false);
    let (found, log) = probe(&r);
    for attempt in [
        "secret-file",
        "other-folder",
        "other-record",
        "state-listing",
        "jobs-listing",
        "other-environ",
        "runner-process",
        "assets-write",
        "record-write",
        "outside-write",
        "shm-shared",
        "std-devices",
    ] {
        assert_eq!(found[attempt], "got", "{attempt}: {log}");
    }
    // A disk's device file opens for root (as this test runs in CI) where the machine has one.
    if readable_disk() {
        assert_eq!(found["disk-device"], "got", "{log}");
    }
}

/// Whether this process can read one of the machine's block devices.
fn readable_disk() -> bool {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir("/dev") else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_type().is_ok_and(|t| t.is_block_device())
            && std::fs::File::open(e.path()).is_ok_and(|mut f| f.read(&mut [0u8; 512]).is_ok())
    })
}

/// A job replaces its log and its checkpoint with links to the runner's secret file (its path
/// is no secret: the job's mount table shows it). The runner, which opens them outside the
/// sandbox, follows neither: the log reads as unreadable, the failed job's message is not the
/// secret, and there is no checkpoint to serve.
#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn links_a_job_leaves_in_its_folder_are_not_followed_by_the_runner() {
    let r = TestRunner::start_with("runner-links", &["--sandbox", "on"]).unwrap();
    let secret_file = r.state_dir.join("state/secret");
    assert!(
        std::fs::read_to_string(&secret_file).is_ok_and(|s| s.contains(&r.secret)),
        "the runner's secret is in {}",
        secret_file.display()
    );
    let script = "rm -f output.log && ln -s \"$1\" output.log && mkdir checkpoint && \
                  ln -s \"$1\" checkpoint/model.safetensors && exit 1";
    let job = r
        .submit(&command_job(
            "edge-links",
            &format!("set -- '{}'\n{script}", secret_file.display()),
            json!({}),
        ))
        .unwrap();
    let v = r
        .wait_state(&job, Duration::from_secs(30), |s| {
            !matches!(s, "queued" | "running")
        })
        .unwrap();
    assert_eq!(v["state"], "failed", "{v}\n{}", r.log());
    assert!(!v.to_string().contains(&r.secret), "{v}");
    assert_eq!(v["checkpoint"], false, "{v}");
    assert!(
        std::fs::symlink_metadata(r.job_dir(&job).join("output.log"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the job did make its log a link"
    );
    let (status, body) = r.get_bytes(&format!("/jobs/{job}/logs"));
    assert_eq!(status, 409, "{}", String::from_utf8_lossy(&body));
    assert!(!String::from_utf8_lossy(&body).contains(&r.secret));
    let (status, body) = r.get_bytes(&format!("/jobs/{job}/checkpoint"));
    assert_eq!(status, 404);
    assert!(!String::from_utf8_lossy(&body).contains(&r.secret));
}
