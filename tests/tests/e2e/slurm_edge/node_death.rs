//! A node that dies under a job, through the edge. On a cluster of two nodes, each in a network of
//! its own that reaches the edge over the cluster network (`PUBLIC_URL` is this machine's address
//! there), a LoRA job's node is killed mid-run: slurmd and the job's processes, as a power cut
//! would, so the job says nothing more. Slurm requeues the job onto the other node; the edge's
//! sweep learns it from Slurm (`requeued`, never `failed`), the second attempt resumes from the
//! last checkpoint the first saved on the shared storage, the job succeeds, its page lists both
//! attempts, its metrics hold every step once, and both attempts are billed. The node then comes
//! back into service.

use super::requeue::{billed_for_both, ms, slurm_id};
use super::{GRANT, World, backend, edge_log, steps_of, submit};
use edge::backends::slurm::ApiVersion;
use onramp_tests::slurm::Slurm;
use onramp_tests::stack::{Stack, StackExtras, StackOptions};
use serde_json::Value;

/// onramp-train's smallest LoRA job on one A100 (the CPU here), 24 steps with a checkpoint every 4.
fn spec() -> String {
    onramp_tests::specs::lora_cpu("node-dies", "slurm")
        .replace("card = \"cpu\"", "card = \"a100-80g\"")
        .replace("steps = 12", "steps = 24")
        + "[checkpoint]\nevery_steps = 4\n"
}

/// The node (0 or 1) Slurm runs job `sid` on.
fn node_of(w: &World, sid: u64) -> u32 {
    let (_, job) = w
        .slurm
        .request("GET", &ApiVersion::V0040.job_path(sid), None);
    match job.pointer("/jobs/0/nodes").and_then(Value::as_str) {
        Some("onramp0") => 0,
        Some("onramp1") => 1,
        other => panic!("job {sid} runs on {other:?}: {job}"),
    }
}

/// A cluster of two nodes, with the trainer's environment and the shared storage, behind an
/// edge that listens where the nodes reach it.
fn world() -> World {
    let slurm = Slurm::start_cluster(
        2,
        1,
        &[
            (onramp_tests::paths::shared_dir(), "shared".into()),
            ("/".into(), "host".into()),
        ],
    )
    .unwrap();
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            public_host: Some(slurm.host_ip.clone()),
            ..StackOptions::for_test("slurm-node-dies")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_GRANT_FEN".into(), GRANT.to_string()),
                ("SILENT_AFTER_S".into(), "0".into()),
            ],
            extra_backends: vec![backend(&slurm)],
        },
    )
    .expect("stack starts");
    World { stack, slurm }
}

#[test]
#[ignore = "needs root, the Slurm chroot, the built stack, the trainer's environment and ../shared: run through `cargo xtask test`"]
fn a_job_whose_node_dies_is_requeued_resumed_and_billed_for_both_attempts() {
    let w = world();
    let u = w.user("slurm-node-dies");
    let (status, a) = submit(&u, &spec());
    assert_eq!(status, 201, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    // Step 5 reported to the edge from the node, over the cluster network: the checkpoint of
    // step 4 is on the shared storage.
    w.wait_job(&u, &id, 600, false, |_| {
        steps_of(&u, &id).last().is_some_and(|s| *s >= 5)
    });
    let sid = slurm_id(&w, &id);
    let node = node_of(&w, sid);
    w.slurm.kill_node(node).unwrap();

    // Slurm finds the node gone and requeues the job: held back until its begin time, which the
    // operator brings forward, then run on the other node. The edge keeps it live throughout.
    let released = std::cell::Cell::new(false);
    let seen = std::cell::RefCell::new(Vec::<String>::new());
    let job = w.wait_job(&u, &id, 900, true, |j| {
        let state = j["state"].as_str().unwrap_or_default().to_string();
        if seen.borrow().last() != Some(&state) {
            seen.borrow_mut().push(state.clone());
        }
        if state == "requeued" && j["reason"] == "BeginTime" && !released.get() {
            let job = format!("jobid={sid}");
            released.set(w.slurm.scontrol(&["update", &job, "starttime=now"]).is_ok());
        }
        !matches!(state.as_str(), "requeued" | "running" | "queued")
    });
    let text = edge_log(&u, &id);
    let seen = seen.into_inner();
    assert_eq!(
        job["state"],
        "succeeded",
        "{seen:?}\n{job}\n{text}\n{}",
        w.logs()
    );
    println!("a job whose node died, as the edge showed it: {seen:?}");
    assert_eq!(node_of(&w, sid), 1 - node, "{job}");

    let attempts = job["attempts"].as_array().cloned().unwrap_or_default();
    assert_eq!(attempts.len(), 2, "{job}");
    let first_ms = ms(&attempts[0]["ended_at"]) - ms(&attempts[0]["started_at"]);
    assert!(first_ms > 0, "{job}");
    // The second attempt's log follows the first's and resumes from the newest checkpoint the
    // first saved (every 4 steps) before its node died.
    let at = usize::try_from(attempts[1]["log_offset"].as_u64().unwrap()).unwrap();
    let (before, after) = text.split_at(at);
    assert!(!before.contains("resuming from "), "{before}");
    let from = after
        .lines()
        .find_map(|l| l.split("/out/checkpoint-").nth(1))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("the second attempt did not resume: {after}"));
    assert!(from >= 4 && from % 4 == 0, "{after}");
    // Steps the first attempt reported past its checkpoint are trained again, and counted once.
    assert_eq!(steps_of(&u, &id), (1..=24).collect::<Vec<u64>>(), "{text}");
    billed_for_both(&u, &job, hold, first_ms);

    // The node comes back and Slurm takes it into service again.
    w.slurm.restart_node(node).unwrap();
    w.slurm.wait_idle().unwrap();
}
