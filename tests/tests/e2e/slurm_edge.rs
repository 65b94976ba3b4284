//! Slurm through the edge's jobs API: the edge's `BACKENDS` names a real Slurm (slurmctld,
//! slurmd, slurmrestd with JWT, fake GPUs through GRES) started by this test, and everything goes
//! through `wrangler dev`:
//!
//! - a tiny-train job runs on Slurm (`onramp-runner` installed in the nodes' `/usr/local/bin`,
//!   the models and corpus on "shared storage" named by `ONRAMP_SHARED`), its job script reports
//!   state and real metrics to the edge with the job's token and pushes its log, which
//!   `GET /api/jobs/{id}/logs?offset=` serves; the hold settles to the time it ran;
//! - a job that needs GPUs that are taken waits, `GET /api/jobs/{id}` says why (Slurm's
//!   `Resources`, in words), and cancelling it through the edge stops it in Slurm and releases
//!   the whole hold; a job that needs more GPUs than the cluster has is refused with Slurm's reason
//!   and holds nothing;
//! - Slurm's time limit kills a job; the cron sweep learns it from Slurm and the job pays its
//!   whole hold; onramp-train, warned before the limit, saves a checkpoint and stops
//!   (`time_limit.rs`);
//! - a `lora` job runs onramp-train through the generated sbatch script (the backend names the
//!   trainer's Python in `ONRAMP_PYTHON`), reports its metrics and settles;
//! - a job requeued mid-run is `requeued`, runs again from its checkpoint and is billed for both
//!   attempts (`requeue.rs`); so is one whose node dies (`node_death.rs`, on two nodes).
//!
//! Needs root, the Slurm chroot (`cargo xtask setup`), the built stack and `../shared`: ignored
//! in a plain `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::{Client, run_scenarios, unique_email};
use onramp_tests::slurm::Slurm;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use onramp_tests::wait;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

mod across;
mod node_death;
mod requeue;
mod suspend;
mod time_limit;

const GRANT: i64 = 100_000;

struct World {
    stack: Stack,
    slurm: Slurm,
}

impl World {
    fn user(&self, tag: &str) -> Client {
        self.stack
            .signup(&unique_email(tag), "correct horse battery")
    }

    fn logs(&self) -> String {
        let edge = self
            .stack
            .edge
            .as_ref()
            .map(|e| e.log_tail(3000))
            .unwrap_or_default();
        format!(
            "--- edge ---\n{edge}\n--- slurm ---\n{}",
            self.slurm.log_tail()
        )
    }

    /// Polls the job until `done`; `sweep` also fires the cron trigger every few seconds.
    fn wait_job(
        &self,
        u: &Client,
        id: &str,
        secs: u64,
        sweep: bool,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut last_sweep = Instant::now();
        wait::until(&format!("job {id}"), Duration::from_secs(secs), || {
            if sweep && last_sweep.elapsed() > Duration::from_secs(5) {
                last_sweep = Instant::now();
                self.stack.run_scheduled("*/5 * * * *")?;
            }
            let j = u.get(&format!("/api/jobs/{id}")).json;
            if done(&j) {
                Ok(Some(j))
            } else {
                Err(format!("so far: {j}"))
            }
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", self.logs()))
    }
}

/// The job's log as a client pages through it from the edge, until the end.
fn edge_log(u: &Client, id: &str) -> String {
    let mut text = String::new();
    for _ in 0..100 {
        let page = u
            .get(&format!("/api/jobs/{id}/logs?offset={}", text.len()))
            .json;
        assert_eq!(page["offset"].as_u64(), Some(text.len() as u64), "{page}");
        text.push_str(page["text"].as_str().unwrap());
        assert_eq!(
            page["next_offset"].as_u64(),
            Some(text.len() as u64),
            "{page}"
        );
        if page["eof"] == true {
            return text;
        }
    }
    panic!("the log of {id} did not end within 100 pages: {text}");
}

/// Whether every line of `part` is a line of `whole`, in the same order.
fn lines_in_order(part: &str, whole: &str) -> bool {
    let mut rest = whole.lines();
    part.lines().all(|l| rest.any(|w| w == l))
}

/// Slurm's own log file of the job whose output contains `marker`.
fn slurm_log(w: &World, marker: &str) -> String {
    std::fs::read_dir(w.slurm.host_path(w.slurm.run_dir()).join("jobs/edge"))
        .unwrap()
        .flatten()
        .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default())
        .find(|t| t.contains(marker))
        .unwrap_or_default()
}

fn submit(u: &Client, spec: &str) -> (u16, Value) {
    let a = u.submit_spec(spec, &random_hex(8));
    (a.status, a.json)
}

fn tiny_spec(steps: u32, time_limit: &str) -> String {
    onramp_tests::specs::tiny_train(steps)
        .replace("backend = \"runner\"", "backend = \"slurm\"")
        .replace(
            "time_limit = \"30m\"",
            &format!("time_limit = \"{time_limit}\""),
        )
}

/// A LoRA job on `gpus` RTX 4090s of one node (it never gets to run its torchrun here).
fn gpu_spec(gpus: u32) -> String {
    format!(
        "name = \"gpu-wait\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\nbackend = \"slurm\"\n\
         [data]\ndataset = \"alpaca-zh\"\ntokens = 100000\nseq_len = 512\n\
         [train]\nsteps = 10\nmicro_batch = 1\nlr = 2e-4\nlora_rank = 8\n\
         [resources]\ncard = \"rtx-4090\"\ncards_per_node = {gpus}\nnodes = 1\ntime_limit = \"2h\"\n"
    )
}

/// The edge's `BACKENDS` entry for the test's Slurm.
fn backend(slurm: &Slurm) -> Value {
    let python = slurm.trainer_python();
    let work_dir = slurm.job_dir("edge").unwrap();
    json!({
        "name": "hpc", "kind": "slurm", "url": slurm.url,
        "secret": format!("{}:{}", slurm.user, slurm.token),
        // The oldest data parser, named (slurm_jwt.rs lets the edge pick the newest served).
        "api_version": "v0.0.40",
        // The deployment declares four GPUs; the node has two (a node is down, say), so Slurm
        // itself refuses what cannot fit.
        "cards": {"cpu": 1, "rtx-4090": 4, "a100-80g": 2},
        "work_dir": work_dir, "cpus_per_task": 1,
        "env": {
            "ONRAMP_SHARED": format!("{}/shared", slurm.run_dir()),
            "RAYON_NUM_THREADS": "1",
            // Where the nodes find onramp-train's environment, models and corpora.
            "ONRAMP_PYTHON": python,
            "ONRAMP_MODELS": format!("{}/shared/models", slurm.run_dir()),
            "ONRAMP_DATASETS": format!("{}/shared/data", slurm.run_dir()),
            "OMP_NUM_THREADS": "1",
            // No node has a GPU: a GPU spec trains on the CPU (gloo).
            "ONRAMP_TRAIN_DEVICE": "cpu",
        },
    })
}

#[test]
#[ignore = "needs root, the Slurm chroot, the built stack and ../shared: run through `cargo xtask test`"]
fn slurm_jobs_through_the_edge() {
    let runner_dir = onramp_tests::paths::runner_bin()
        .parent()
        .unwrap()
        .to_path_buf();
    let slurm = Slurm::start_with_binds(
        2,
        &[
            // Where a cluster installs onramp-runner on every node.
            (runner_dir, "/usr/local/bin".into()),
            // The models and corpora on the cluster's shared storage.
            (onramp_tests::paths::shared_dir(), "shared".into()),
            // This machine, where the trainer's Python environment lives (see `Slurm::trainer_python`).
            ("/".into(), "host".into()),
        ],
    )
    .unwrap();
    let backend = backend(&slurm);
    let stack = Stack::start_with(
        StackOptions::for_test("slurm-edge"), // with the local runner: `across.rs`
        StackExtras {
            vars: vec![
                ("SIGNUP_GRANT_FEN".into(), GRANT.to_string()),
                // The cron sweep asks Slurm about every active job (jobs killed by Slurm cannot
                // say so themselves).
                ("SILENT_AFTER_S".into(), "0".into()),
            ],
            extra_backends: vec![backend],
        },
    )
    .expect("stack starts");
    let world = World { stack, slurm };
    // The node has two CPUs and each job takes one: the GPU scenario (with a job holding the
    // GPUs) goes first so that nothing else queues ahead of its waiting job, then the other two.
    run_scenarios(
        &world,
        &[(
            "a job waiting for GPUs says why; cancel releases its hold",
            gpu_wait,
        )],
    );
    run_scenarios(
        &world,
        &[
            (
                "tiny-train on Slurm: reports, metrics, logs, settlement; then a job \
                 suspended by the cluster, billed for the time it ran",
                tiny_train_then_suspended,
            ),
            (
                "Slurm's time limit: the sweep settles the whole hold",
                time_limit::killed,
            ),
        ],
    );
    run_scenarios(
        &world,
        &[
            (
                "onramp-train on Slurm: the sbatch script runs the trainer, metrics, settlement",
                trainer,
            ),
            (
                "a runner job's uploaded checkpoint continued on Slurm",
                across::continued_across_backends,
            ),
            (
                "onramp-train warned before its time limit: checkpoint, timed_out, card time",
                time_limit::warned,
            ),
        ],
    );
    run_scenarios(
        &world,
        &[(
            "a job requeued mid-run: requeued, resumed, both attempts logged and billed",
            requeue::requeued,
        )],
    );
}

/// onramp-train's smallest LoRA job, saving a checkpoint every 6 of its 12 steps.
fn lora_cpu() -> String {
    format!(
        "{}[checkpoint]\nevery_steps = 6\n",
        onramp_tests::specs::lora_cpu("slurm-lora", "slurm")
    )
}

/// The steps of a job's metrics, in order.
fn steps_of(u: &Client, id: &str) -> Vec<u64> {
    u.get(&format!("/api/jobs/{id}/metrics")).json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["step"].as_u64().unwrap())
        .collect()
}

/// After a first LoRA job (`first`), two more at once in the same `work_dir`: the same spec
/// again, on the same corpus uploaded by the user (which the job fetches from the edge), starts
/// at step 1 in a folder of its own, while one that names `first` in `checkpoint.resume_from`
/// (and asks for 18 steps) goes on from `first`'s step-12 checkpoint.
fn trainer_jobs_continue_only_what_they_name(w: &World, u: &Client, first: &str) {
    let dataset = onramp_tests::cli::upload_corpus(&w.stack, u);
    let uploaded = lora_cpu().replace("\"tinyshakespeare\"", &format!("\"{dataset}\""));
    let (status, a) = submit(u, &uploaded);
    assert_eq!(status, 201, "{a}");
    let again = a["id"].as_str().unwrap().to_string();
    let continued =
        lora_cpu().replace("steps = 12", "steps = 18") + &format!("resume_from = \"{first}\"\n");
    let (status, a) = submit(u, &continued);
    assert_eq!(status, 201, "{a}");
    let continued = a["id"].as_str().unwrap().to_string();
    for id in [&again, &continued] {
        let job = w.wait_job(u, id, 600, false, |j| {
            !matches!(
                j["state"].as_str(),
                Some("dispatching" | "queued" | "running")
            )
        });
        assert_eq!(job["state"], "succeeded", "{job}\n{}", edge_log(u, id));
    }
    let fresh = edge_log(u, &again);
    assert!(!fresh.contains("resuming from"), "{fresh}");
    assert!(
        fresh.contains(&format!("dataset {dataset} is in the job's folder")),
        "{fresh}"
    );
    assert_eq!(steps_of(u, &again).first(), Some(&1), "{fresh}");
    let resumed = edge_log(u, &continued);
    assert!(
        resumed.contains("resuming from ") && resumed.contains("/out/checkpoint-12"),
        "{resumed}"
    );
    let steps = steps_of(u, &continued);
    assert_eq!(
        (steps.first(), steps.last()),
        (Some(&13), Some(&18)),
        "{resumed}"
    );
}

fn trainer(w: &World) {
    let u = w.user("slurm-lora");
    let (status, a) = submit(&u, &lora_cpu());
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["backend"], "hpc", "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let job = w.wait_job(&u, &id, 600, false, |j| {
        !matches!(
            j["state"].as_str(),
            Some("dispatching" | "queued" | "running")
        )
    });
    let text = edge_log(&u, &id);
    assert_eq!(
        job["state"],
        "succeeded",
        "{job}
{text}
{}",
        w.logs()
    );
    assert!(text.contains("lora of mini"), "{text}");
    let m = u.get(&format!("/api/jobs/{id}/metrics")).json;
    let losses: Vec<f64> = m["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["loss"].as_f64().unwrap())
        .collect();
    assert!(losses.len() >= 12, "{m}");
    assert_eq!(m["metrics"].as_array().unwrap().last().unwrap()["step"], 12);
    assert!(
        losses.last().unwrap() < losses.first().unwrap(),
        "{losses:?}"
    );
    let charged = job["charged_fen"].as_i64().unwrap();
    assert!(
        charged >= 0 && charged <= a["hold_fen"].as_i64().unwrap(),
        "{job}"
    );
    assert_eq!(u.balance(), GRANT - charged);
    // What it trained left the cluster: the wrapper pushed it to the edge's R2.
    let files = u.artifacts_checked(
        &id,
        &[
            "adapter/adapter_model.safetensors",
            "metrics.json",
            "spec.toml",
            "job.log",
        ],
    );
    // This run's log, the whole training in it: the wrapper pushes after the trainer ends.
    let (_, log) = files.iter().find(|(n, _)| n == "job.log").unwrap();
    let log = String::from_utf8_lossy(log);
    assert!(
        log.contains("lora of mini") && log.contains("training: "),
        "{log}"
    );
    trainer_jobs_continue_only_what_they_name(w, &u, &id);

    // A dataset the cluster does not have: the job fails, and its page says why (the trainer's
    // last line after the script's exit code).
    let spec = lora_cpu().replace("\"tinyshakespeare\"", "\"no-such-corpus\"");
    let (status, a) = submit(&u, &spec);
    assert_eq!(status, 201, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let job = w.wait_job(&u, &id, 300, false, |j| {
        !matches!(
            j["state"].as_str(),
            Some("dispatching" | "queued" | "running")
        )
    });
    assert_eq!(job["state"], "failed", "{job}");
    let msg = job["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("exited with code 4: onramp-train: error:")
            && msg.contains("no-such-corpus"),
        "{job}"
    );
}

/// One after the other, each taking one of the node's two CPUs while the time limit's scenario
/// beside them takes the other.
fn tiny_train_then_suspended(w: &World) {
    tiny_train(w);
    suspend::suspended(w);
}

fn tiny_train(w: &World) {
    let u = w.user("slurm-tiny");
    let (status, a) = submit(&u, &tiny_spec(30, "10m"));
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["backend"], "hpc", "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    assert_eq!(u.balance(), GRANT - hold);
    let job = w.wait_job(&u, &id, 180, false, |j| {
        !matches!(j["state"].as_str(), Some("queued" | "running"))
    });
    assert_eq!(job["state"], "succeeded", "{job}\n{}", w.logs());

    // Metrics came from the job itself (its script forwards tiny-train's JSON lines).
    let m = u.get(&format!("/api/jobs/{id}/metrics")).json;
    let points = m["metrics"].as_array().unwrap();
    assert!(points.len() >= 10, "{m}");
    assert_eq!(points.last().unwrap()["step"], 30, "{m}");
    assert!(
        points
            .iter()
            .all(|p| p["loss"].as_f64().is_some_and(|l| l > 0.0 && l < 10.0))
    );

    // The log, pushed by the job script, read through the edge from any offset; the same bytes
    // are in Slurm's own log file on the cluster (with whatever the wrapper itself said).
    let slurm_log = slurm_log(w, ", 30 steps of");
    let text = edge_log(&u, &id);
    let end = text.len();
    assert!(text.starts_with("tiny-train: "), "{text}");
    assert!(
        text.contains("\"step\":30"),
        "the edge's log lacks step 30:\n{text}\n--- Slurm's log file ---\n{slurm_log}"
    );
    // Slurm's file also holds what the wrapper said to the operator (a curl that was retried),
    // between the job's own lines.
    assert!(
        lines_in_order(&text, &slurm_log),
        "the edge's log is not Slurm's, line by line:\n{text}\n--- Slurm's log file ---\n{slurm_log}"
    );
    let tail = u.get(&format!("/api/jobs/{id}/logs?offset=10")).json;
    assert!(
        text[10..].starts_with(tail["text"].as_str().unwrap()),
        "{tail}"
    );
    let past = u.get(&format!("/api/jobs/{id}/logs?offset={end}")).json;
    assert_eq!(
        (past["text"].as_str(), past["eof"].as_bool()),
        (Some(""), Some(true))
    );

    // Settled to the time it ran; someone else cannot read it.
    let charged = job["charged_fen"].as_i64().unwrap();
    assert!((0..=hold).contains(&charged), "{job}");
    assert_eq!(u.balance(), GRANT - charged);
    let other = w.user("slurm-other");
    assert_eq!(
        other.get(&format!("/api/jobs/{id}/logs?offset=0")).status,
        404
    );
}

/// Another user of the cluster takes both GPUs (a job submitted to Slurm directly); its id.
fn hold_both_gpus(w: &World) -> u64 {
    use edge::backends::slurm::{ApiVersion, SubmitOptions, parse_submit, submit_body};
    let (valid, diags) = jobspec::validate_toml(&gpu_spec(2));
    let valid = valid.unwrap_or_else(|| panic!("{diags:?}"));
    let options = SubmitOptions {
        version: ApiVersion::V0042,
        job_id: "holder".into(),
        partition: None,
        work_dir: w.slurm.job_dir("holder").unwrap(),
        retention_s: edge::backends::slurm::DEFAULT_RETENTION_S,
        report: None,
        env: Default::default(),
        cpus_per_task: Some(1),
        payload: Some("sleep 300".into()),
        requeue: true,
        stop_warning_s: 0,
    };
    let body = submit_body(&valid, &options).unwrap();
    let (_, answer) = w
        .slurm
        .request("POST", &ApiVersion::V0042.submit_path(), Some(&body));
    let id = parse_submit(&answer).unwrap();
    wait::until("the holder to run", Duration::from_secs(30), || {
        let (_, v) = w
            .slurm
            .request("GET", &ApiVersion::V0042.job_path(id), None);
        Ok((v.pointer("/jobs/0/job_state/0") == Some(&json!("RUNNING"))).then_some(()))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", w.logs()));
    id
}

fn gpu_wait(w: &World) {
    let u = w.user("slurm-gpu");
    let holder = hold_both_gpus(w);
    let (status, a) = submit(&u, &gpu_spec(2));
    assert_eq!(status, 201, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    assert_eq!(u.balance(), GRANT - hold);
    // Reading the job asks Slurm why it waits.
    let job = w.wait_job(&u, &id, 60, false, |j| j["reason"] == "Resources");
    assert_eq!(job["state"], "queued", "{job}");
    // Slurm forecasts a start time for a pending job; it has not started.
    assert_eq!(job["started_at"], Value::Null, "{job}");
    let msg = job["message"].as_str().unwrap();
    assert!(msg.contains("not enough free GPUs"), "{msg}");
    let zh = job["reason_messages"]["zh-CN"].as_str().unwrap();
    assert!(zh.contains("等待资源"), "{zh}");

    // Cancel through the edge: Slurm cancels it, the hold comes back whole.
    let c = u.post(&format!("/api/jobs/{id}/cancel"), &json!({}));
    assert_eq!(c.status, 200, "{:?}", c.json);
    assert_eq!(
        (c.json["state"].as_str(), c.json["charged_fen"].as_i64()),
        (Some("cancelled"), Some(0))
    );
    assert_eq!(c.json["reason"], Value::Null);
    assert_eq!(u.balance(), GRANT);
    let ledger = u.get("/api/ledger").json;
    let kinds: Vec<&str> = ledger["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"release") && !kinds.contains(&"capture"),
        "{ledger}"
    );
    let (_, jobs) = w.slurm.request("GET", "/slurm/v0.0.42/jobs", None);
    let in_slurm = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"].as_str().is_some_and(|n| n.ends_with(&id)))
        .map(|j| j["job_state"][0].clone());
    assert_eq!(in_slurm, Some(json!("CANCELLED")), "{jobs}");

    // More GPUs than any node has: Slurm refuses at once, and nothing is held.
    let (status, refused) = submit(&u, &gpu_spec(4));
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (422, Some("backend_refused")),
        "{refused}"
    );
    let why = refused["error"]["message"].as_str().unwrap();
    assert!(
        why.contains("Requested node configuration is not available"),
        "{why}"
    );
    assert_eq!(u.balance(), GRANT);
    assert_eq!(u.get("/api/jobs").json["jobs"].as_array().unwrap().len(), 1);
    let (code, body) = w
        .slurm
        .request("DELETE", &format!("/slurm/v0.0.42/job/{holder}"), None);
    assert_eq!(code, 200, "{body}");
}
