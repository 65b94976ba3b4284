//! A job's time limit on Slurm, through the edge: tiny-train past its limit is killed by Slurm,
//! which the sweep learns, and it pays its whole hold; onramp-train is warned before its limit
//! (the backend's stop warning, SIGTERM to the whole job), saves a checkpoint at the step it is
//! in and stops, and the job ends `timed_out` saying where, billed for the time it used.

use super::{GRANT, World, edge_log, slurm_log, submit, tiny_spec};
use onramp_tests::wait;
use std::time::Duration;

/// tiny-train past its limit: Slurm kills it, the sweep learns it, the whole hold is paid.
pub(super) fn killed(w: &World) {
    let u = w.user("slurm-limit");
    // One minute is Slurm's smallest limit; the job trains for longer than that.
    let (status, a) = submit(&u, &tiny_spec(100_000, "1m"));
    assert_eq!(status, 201, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    w.wait_job(&u, &id, 60, false, |j| j["state"] == "running");
    // Slurm kills it at the limit; the job cannot say so, the sweep finds out.
    let job = w.wait_job(&u, &id, 180, true, |j| {
        !matches!(j["state"].as_str(), Some("queued" | "running"))
    });
    assert_eq!(job["state"], "timed_out", "{job}");
    assert_eq!(job["charged_fen"], hold, "{job}");
    assert_eq!(u.balance(), GRANT - hold);

    // Its log reaches the edge whole, up to Slurm stopping it: the script ships the rest after
    // SIGTERM, within Slurm's grace period before SIGKILL. (The lines Slurm itself adds to its
    // file are not the job's output.)
    wait::until(
        "the killed job's whole log in the edge",
        Duration::from_secs(45),
        || {
            let file = slurm_log(w, ", 100000 steps of");
            // Slurm writes this line when it stops the job; the file is then complete.
            if !file.contains("DUE TO TIME LIMIT") {
                return Err(format!("Slurm's log file so far: {file}"));
            }
            let job_output: String = file
                .lines()
                .filter(|l| !l.starts_with("slurmstepd"))
                .map(|l| format!("{l}\n"))
                .collect();
            let text = edge_log(&u, &id);
            if text == job_output {
                Ok(Some(()))
            } else {
                Err(format!(
                    "the edge has {text:?}\n--- Slurm's log file ---\n{file}"
                ))
            }
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()));
}

/// onramp-train's smallest LoRA job on one RTX 4090 (the CPU here), with far more steps than
/// 2 minutes allow and no checkpoint of its own before the end. The backend's stop warning
/// (5 minutes, at most half the limit) comes 1 minute before the limit.
fn long_lora() -> String {
    onramp_tests::specs::lora_cpu("slurm-warned", "slurm")
        .replace("steps = 12", "steps = 100000")
        .replace("card = \"cpu\"", "card = \"rtx-4090\"\ncards_per_node = 1")
        .replace("time_limit = \"20m\"", "time_limit = \"2m\"")
        + "[checkpoint]\nevery_steps = 100000\n"
}

pub(super) fn warned(w: &World) {
    let u = w.user("slurm-warned");
    let (status, a) = submit(&u, &long_lora());
    assert_eq!(status, 201, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    let job = w.wait_job(&u, &id, 600, true, |j| {
        !matches!(
            j["state"].as_str(),
            Some("dispatching" | "queued" | "running")
        )
    });
    let log = edge_log(&u, &id);
    assert_eq!(job["state"], "timed_out", "{job}\n{log}");
    // The job's own words: where it stopped and what continues it.
    let message = job["message"].as_str().unwrap_or_default();
    let step: u64 = message
        .strip_prefix("stopped at its time limit, at step ")
        .and_then(|m| m.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{job}\n{log}"));
    assert!(message.contains("checkpoint.resume_from"), "{message}");
    assert!(
        log.contains(&format!("stopped by the cluster (SIGTERM) at step {step}")),
        "{log}"
    );
    // The checkpoint is in the job's folder, whole (its trainer state is written last).
    let folder = w
        .slurm
        .host_path(&format!("{}/jobs/edge/{id}/out", w.slurm.run_dir()));
    let saved: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("checkpoint-"))
        .collect();
    assert_eq!(saved, [format!("checkpoint-{step}")], "{log}");
    assert!(
        folder
            .join(format!("checkpoint-{step}/trainer_state.json"))
            .is_file()
    );
    // It stopped before its limit and pays the card time it used, not the whole limit.
    let ran = super::requeue::ms(&job["ended_at"]) - super::requeue::ms(&job["started_at"]);
    assert!(ran < 120_000, "ran {ran} ms\n{job}");
    let charged = job["charged_fen"].as_i64().unwrap();
    assert!(0 < charged && charged < hold, "{charged} of {hold}\n{job}");
    assert_eq!(u.balance(), GRANT - charged);
    println!(
        "warned before its 2-minute limit: stopped at step {step} after {ran} ms, charged {charged} of a {hold} fen hold"
    );
}
