//! A job its cluster stops and runs again, through the edge: `scontrol requeue` mid-run. The
//! edge shows the job `requeued` (live, never back to `queued`), then `running` again; the
//! trainer saves a checkpoint on Slurm's SIGTERM and the second attempt resumes there; the job
//! page lists both attempts, the log holds both, one after the other, with where the second
//! begins; the metrics are steps 1 to the end, once each; and both attempts are billed.

use super::{World, edge_log, steps_of, submit};
use edge::backends::slurm::ApiVersion;
use edge::credits::capture_fen;
use onramp_tests::api::Client;
use serde_json::Value;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(120);

/// onramp-train's smallest LoRA job on 1 node × 2 A100s (2 ranks on the CPU here, gloo): a card
/// priced high enough that the seconds of each attempt show in the bill.
fn spec() -> String {
    onramp_tests::specs::lora_cpu("requeue", "slurm").replace(
        "card = \"cpu\"",
        "card = \"a100-80g\"\ncards_per_node = 2\nnodes = 1",
    )
}

/// Slurm's id of the edge's job `id` (Slurm names it `<spec name>-<job id>`).
pub(super) fn slurm_id(w: &World, id: &str) -> u64 {
    let (_, jobs) = w.slurm.request("GET", &ApiVersion::V0040.jobs_path(), None);
    let suffix = format!("-{}", jobspec::launch::safe_name(id));
    jobs["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|j| j["name"].as_str().is_some_and(|n| n.ends_with(&suffix)))
        .and_then(|j| j["job_id"].as_u64())
        .unwrap_or_else(|| panic!("Slurm has no job named *{suffix}: {jobs}"))
}

pub(super) fn ms(t: &Value) -> i64 {
    t.as_str()
        .and_then(api::time::parse_rfc3339_ms)
        .unwrap_or_else(|| panic!("not a time: {t}"))
}

pub(super) fn requeued(w: &World) {
    let u = w.user("slurm-requeue");
    let (status, a) = submit(&u, &spec());
    assert_eq!(status, 201, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    w.wait_job(&u, &id, 600, false, |_| {
        steps_of(&u, &id).last().is_some_and(|s| *s >= 3)
    });
    let sid = slurm_id(w, &id).to_string();
    w.slurm
        .scontrol(&["requeue", &sid])
        .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()));
    // The sweep (and the page) learn it from Slurm: requeued, waiting to run again (held back
    // until its begin time).
    let job = w.wait_job(&u, &id, 180, true, |j| {
        j["state"] != "running" || j["reason"] == "BeginTime"
    });
    assert_eq!(job["state"], "requeued", "{job}\n{}", w.logs());
    // Run again, it may use what the first attempt left of its 20 minutes, no more.
    let limit = lowered_limit(w, &sid);
    let job = w.wait_job(&u, &id, 180, true, |j| {
        j["state"] != "requeued" || j["reason"] == "BeginTime"
    });
    // Slurm holds a requeued job back for two minutes; the operator lets it go now.
    if job["state"] == "requeued" {
        assert!(
            job["message"]
                .as_str()
                .is_some_and(|m| m.contains("requeued")),
            "{job}"
        );
        w.slurm
            .scontrol(&["update", &format!("jobid={sid}"), "starttime=now"])
            .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()));
    }
    let job = w.wait_job(&u, &id, 600, true, |j| {
        !matches!(j["state"].as_str(), Some("requeued" | "running" | "queued"))
    });
    let text = edge_log(&u, &id);
    assert_eq!(job["state"], "succeeded", "{job}\n{text}\n{}", w.logs());

    // Both attempts, the first ended where Slurm requeued it, the second's log after the first's.
    let attempts = job["attempts"].as_array().cloned().unwrap_or_default();
    assert_eq!(attempts.len(), 2, "{job}");
    let (first, second) = (&attempts[0], &attempts[1]);
    assert_eq!(
        (first["attempt"].as_u64(), second["attempt"].as_u64()),
        (Some(0), Some(1))
    );
    let first_ms = ms(&first["ended_at"]) - ms(&first["started_at"]);
    assert!(first_ms > 0, "{job}");
    assert_eq!(
        i64::try_from(limit).unwrap(),
        (20 * 60_000 - first_ms) / 60_000,
        "Slurm's limit for the second attempt, after a first of {first_ms} ms"
    );
    assert!(ms(&second["started_at"]) >= ms(&first["ended_at"]), "{job}");
    let at = usize::try_from(second["log_offset"].as_u64().unwrap()).unwrap();
    let (before, after) = text.split_at(at);
    assert!(
        before.contains("stopped by the cluster (SIGTERM) at step "),
        "{before}\n--- the second attempt ---\n{after}"
    );
    assert!(
        after.contains("resuming from ") && !before.contains("resuming from "),
        "{before}\n--- the second attempt ---\n{after}"
    );
    // Every step once, in order, across the two attempts.
    assert_eq!(steps_of(&u, &id), (1..=12).collect::<Vec<u64>>(), "{text}");

    billed_for_both(&u, &job, hold, first_ms);
}

/// Slurm's time limit of job `sid` once the sweep has lowered it from the spec's 20 minutes to
/// the whole minutes the first attempt left.
fn lowered_limit(w: &World, sid: &str) -> u64 {
    onramp_tests::wait::until("Slurm's lowered time limit", WAIT, || {
        let (_, jobs) = w.slurm.request(
            "GET",
            &ApiVersion::V0040.job_path(sid.parse().unwrap()),
            None,
        );
        let minutes = jobs["jobs"][0]["time_limit"]["number"].as_u64();
        Ok(minutes.filter(|m| *m < 20))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()))
}

/// Billed for both attempts: at least the first attempt's time plus the second's (from its
/// start as the edge recorded it to the end Slurm gave; a second either way for the clocks).
pub(super) fn billed_for_both(u: &Client, job: &Value, hold: i64, first_ms: i64) {
    let second = &job["attempts"][1];
    let charged = job["charged_fen"].as_i64().unwrap();
    let second_ms = ms(&job["ended_at"]) - ms(&second["started_at"]);
    let cards = u32::try_from(job["cards"].as_u64().unwrap()).unwrap();
    let both = capture_fen(hold, 1000, cards, first_ms + second_ms - 2000);
    let last_only = capture_fen(hold, 1000, cards, second_ms + 2000);
    assert!(
        charged >= both && charged > last_only && charged <= hold,
        "charged {charged} fen; both attempts {both}, the last alone {last_only}: {job}"
    );
    assert_eq!(u.balance(), super::GRANT - charged);
    println!(
        "requeued job: attempt 0 ran {first_ms} ms, attempt 1 {second_ms} ms; charged {charged} fen \
         (both attempts: at least {both}; the last alone: {last_only}; hold {hold})"
    );
}
