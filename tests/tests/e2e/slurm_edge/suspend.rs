//! A job its cluster suspends mid-run (`scontrol suspend`, as an operator or gang scheduling
//! does) and resumes, through the edge: it stays `running` to its owner, whose page says the
//! cluster suspended it, goes on where it stopped, succeeds, and is billed for the time it ran,
//! not for the time it was suspended.

use super::requeue::{ms, slurm_id};
use super::{GRANT, World, steps_of, submit};
use edge::credits::capture_fen;
use std::time::Duration;

/// How long the cluster holds the job suspended: long enough that its price shows in the bill.
const HELD_S: i64 = 30;

/// onramp-train's smallest LoRA job on one A100, a card priced so that seconds show in the bill.
fn spec() -> String {
    onramp_tests::specs::lora_cpu("suspended", "slurm").replace(
        "card = \"cpu\"",
        "card = \"a100-80g\"\ncards_per_node = 1\nnodes = 1",
    )
}

pub(super) fn suspended(w: &World) {
    let u = w.user("slurm-suspend");
    let (status, a) = submit(&u, &spec());
    assert_eq!(status, 201, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    w.wait_job(&u, &id, 600, false, |_| {
        steps_of(&u, &id).last().is_some_and(|s| *s >= 2)
    });
    let sid = slurm_id(w, &id);
    w.slurm
        .scontrol(&["suspend", &sid.to_string()])
        .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()));
    onramp_tests::wait::until(
        &format!("the job suspended for {HELD_S} s"),
        Duration::from_secs(120),
        || Ok(w.slurm.suspended_for(sid).filter(|s| *s >= HELD_S)),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()));
    // Still running to its owner, who reads why it makes no progress.
    let job = w.wait_job(&u, &id, 60, true, |j| j["reason"] == "Suspended");
    assert_eq!(job["state"], "running", "{job}");
    let said = &job["reason_messages"];
    assert!(
        said["en"]
            .as_str()
            .is_some_and(|m| m.starts_with("suspended by the cluster"))
            && said["zh-CN"]
                .as_str()
                .is_some_and(|m| m.starts_with("被集群暂停")),
        "{job}"
    );
    w.slurm
        .scontrol(&["resume", &sid.to_string()])
        .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()));
    let job = w.wait_job(&u, &id, 600, true, |j| {
        !matches!(j["state"].as_str(), Some("queued" | "running"))
    });
    assert_eq!(
        (job["state"].as_str(), job["reason"].as_str()),
        (Some("succeeded"), None),
        "{job}\n{}",
        w.logs()
    );
    assert_eq!(steps_of(&u, &id), (1..=12).collect::<Vec<u64>>(), "{job}");

    // Billed for its span less the suspension (a second either way for the clocks); without the
    // suspension taken out it would have paid for the whole span.
    let span_ms = ms(&job["ended_at"]) - ms(&job["started_at"]);
    let charged = job["charged_fen"].as_i64().unwrap();
    let ran = capture_fen(hold, 1000, 1, span_ms - HELD_S * 1000 + 2000);
    let whole = capture_fen(hold, 1000, 1, span_ms - 2000);
    assert!(
        0 < charged && charged <= ran && charged < whole,
        "charged {charged} fen; the time it ran at most {ran}, its whole span {whole}: {job}"
    );
    assert_eq!(u.balance(), GRANT - charged);
    println!(
        "suspended job: a {span_ms} ms span, {HELD_S} s of it suspended; charged {charged} fen \
         (the time it ran: at most {ran}; the whole span: {whole}; hold {hold})"
    );
}
