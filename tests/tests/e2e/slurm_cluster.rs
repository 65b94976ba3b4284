//! onramp-train's multi-rank jobs on a real Slurm, launched by the sbatch script jobspec writes
//! (`srun … torchrun …`), on the CPU (gloo) with fake GPUs through GRES:
//!
//! - two 2-rank jobs at once on one node both succeed: each job's rendezvous is its own
//!   (`torchrun --standalone` on one node), not a shared 29500;
//! - a job requeued mid-run (`scontrol requeue`) saves a checkpoint on Slurm's SIGTERM and its
//!   second attempt resumes there, ending with the losses of a run never stopped;
//! - one job across two nodes (each a network namespace with its own address and hostname)
//!   starts through c10d rendezvous on its first node and trains exactly as the same spec does
//!   on one node with two ranks.
//!
//! A job whose node dies is tested through the edge, which bills it (`slurm_edge/node_death.rs`).
//!
//! Needs root, the Slurm chroot, the trainer's environment (`ONRAMP_PYTHON`) and `../shared`:
//! ignored in a plain `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use api::JobState;
use edge::backends::slurm::{
    ApiVersion, JobStatus, SubmitOptions, parse_job, parse_submit, submit_body,
};
use onramp_tests::slurm::Slurm;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const V: ApiVersion = ApiVersion::V0042;

/// onramp-train's smallest LoRA job on `nodes` × `cards` A100s (run on the CPU here).
fn spec(nodes: u32, cards: u32) -> jobspec::ValidSpec {
    let toml = onramp_tests::specs::lora_cpu("ranks", "slurm").replace(
        "card = \"cpu\"",
        &format!("card = \"a100-80g\"\ncards_per_node = {cards}\nnodes = {nodes}"),
    );
    let (v, diags) = jobspec::validate_toml(&toml);
    v.unwrap_or_else(|| panic!("{diags:?}\n{toml}"))
}

/// A cluster with the trainer's environment, the models and the corpora on every node.
fn cluster(nodes: u32, gpus: u32) -> Slurm {
    Slurm::start_cluster(
        nodes,
        gpus,
        &[
            (onramp_tests::paths::shared_dir(), "shared".into()),
            ("/".into(), "host".into()),
        ],
    )
    .unwrap()
}

struct Jobs<'a> {
    slurm: &'a Slurm,
    work_dir: String,
    python: String,
}

impl<'a> Jobs<'a> {
    fn new(slurm: &'a Slurm) -> Jobs<'a> {
        Jobs {
            slurm,
            work_dir: slurm.job_dir("work").unwrap(),
            python: slurm.trainer_python(),
        }
    }

    /// Submits the spec as the edge would, its generated launch line unchanged.
    fn submit(&self, v: &jobspec::ValidSpec, name: &str) -> u64 {
        let run = self.slurm.run_dir();
        let env = BTreeMap::from(
            [
                ("ONRAMP_PYTHON", self.python.clone()),
                ("ONRAMP_MODELS", format!("{run}/shared/models")),
                ("ONRAMP_DATASETS", format!("{run}/shared/data")),
                ("ONRAMP_TRAIN_DEVICE", "cpu".into()),
                ("OMP_NUM_THREADS", "1".into()),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        );
        let o = SubmitOptions {
            version: V,
            job_id: name.into(),
            partition: None,
            work_dir: self.work_dir.clone(),
            retention_s: edge::backends::slurm::DEFAULT_RETENTION_S,
            report: None,
            env,
            cpus_per_task: Some(1),
            payload: None,
            requeue: true,
            stop_warning_s: 0,
        };
        let body = submit_body(v, &o).unwrap();
        let (_, answer) = self.slurm.request("POST", &V.submit_path(), Some(&body));
        parse_submit(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"))
    }

    fn status(&self, id: u64) -> Result<JobStatus, String> {
        let (code, body) = self.slurm.request("GET", &V.job_path(id), None);
        if code != 200 {
            return Err(format!("HTTP {code}: {body}"));
        }
        parse_job(&body)
    }

    /// Waits for Slurm's requeue of the job: the edge reads its status `requeued`, attempt 1,
    /// with the requeue's time. Slurm holds a requeued job back two minutes (`BeginTime`); the
    /// operator lets it go at once instead.
    fn release_requeued(&self, id: u64) {
        let st =
            onramp_tests::wait::until("Slurm to requeue the job", Duration::from_secs(180), || {
                let s = self.status(id)?;
                let held = s.reason.as_deref() == Some("BeginTime");
                Ok((s.attempt >= 1 && (held || s.state == JobState::Running)).then_some(s))
            })
            .unwrap_or_else(|e| panic!("{e}\n{}", self.log(id)));
        assert_eq!(st.attempt, 1, "{st:?}");
        assert!(st.requeued_at.is_some(), "{st:?}");
        if st.state != JobState::Running {
            assert_eq!(st.state, JobState::Requeued, "{st:?}");
            self.slurm
                .scontrol(&["update", &format!("jobid={id}"), "starttime=now"])
                .unwrap_or_else(|e| panic!("{e}\n{}", self.log(id)));
        }
    }

    fn log_file(&self, id: u64) -> PathBuf {
        self.slurm
            .host_path(&self.work_dir)
            .join(format!("slurm-{id}.out"))
    }

    fn log(&self, id: u64) -> String {
        std::fs::read_to_string(self.log_file(id)).unwrap_or_default()
    }

    /// Waits for the job's end and requires that it succeeded; its losses by step, all 12.
    fn losses(&self, id: u64) -> Vec<(u64, f64)> {
        let losses = self.losses_from(id, 0);
        assert_eq!(
            losses.iter().map(|p| p.0).collect::<Vec<_>>(),
            (1..=12).collect::<Vec<_>>(),
            "{}",
            self.log(id)
        );
        losses
    }

    /// The log of the job's `attempt` (0 for the first run, 1 after one requeue), which the job
    /// script keeps in the job's own folder, if there is one yet.
    fn attempt(&self, id: u64, attempt: u32) -> Option<String> {
        std::fs::read_dir(self.slurm.host_path(&self.work_dir))
            .ok()?
            .flatten()
            .map(|d| d.path().join(format!("onramp-{id}.{attempt}.log")))
            .find_map(|f| std::fs::read_to_string(f).ok())
    }

    /// Waits for the job's end and requires that it succeeded; the losses its `attempt` (0 for
    /// the first run, 1 after one requeue) printed, by step.
    fn losses_from(&self, id: u64, attempt: u32) -> Vec<(u64, f64)> {
        let end = onramp_tests::wait::until(
            &format!("Slurm job {id} to end"),
            Duration::from_secs(300),
            || {
                let s = self.status(id)?;
                Ok(s.state.is_terminal().then_some(s))
            },
        )
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", self.log(id), self.slurm.log_tail()));
        let log = self.log(id);
        assert_eq!(end.state, JobState::Succeeded, "{end:?}\n{log}");
        let log = self
            .attempt(id, attempt)
            .unwrap_or_else(|| panic!("no log of attempt {attempt} of {id}: {log}"));
        // A step that was also evaluated prints its line again with `val_loss`.
        let mut losses: Vec<(u64, f64)> = log
            .lines()
            .filter(|l| l.starts_with("{\"step\":"))
            .map(|l| {
                let p: serde_json::Value = serde_json::from_str(l).unwrap();
                (p["step"].as_u64().unwrap(), p["loss"].as_f64().unwrap())
            })
            .collect();
        losses.dedup_by_key(|p| p.0);
        losses
    }
}

/// `scontrol requeue` while the job trains: Slurm stops it (SIGTERM), the trainer saves a
/// checkpoint at that step on both ranks and exits, and Slurm runs the script again in the same
/// folder, where the trainer resumes at that step and ends as a run never stopped (`reference`).
fn requeued_mid_run_resumes_at_its_checkpoint(jobs: &Jobs<'_>, reference: &[(u64, f64)]) {
    let id = jobs.submit(&spec(1, 2), "requeued");
    let attempt = |n: u32| jobs.attempt(id, n).unwrap_or_default();
    onramp_tests::wait::until("the job's step 3", Duration::from_secs(300), || {
        Ok(attempt(0).contains("{\"step\": 3,").then_some(()))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", jobs.log(id)));
    jobs.slurm
        .scontrol(&["requeue", &id.to_string()])
        .unwrap_or_else(|e| panic!("{e}\n{}", attempt(0)));
    jobs.release_requeued(id);
    let after = jobs.losses_from(id, 1);
    let first = attempt(0);
    let stopped = first
        .lines()
        .find_map(|l| l.split("stopped by the cluster (SIGTERM) at step ").nth(1))
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("the first attempt did not stop with a checkpoint: {first}"));
    assert!((3..12).contains(&stopped), "{first}");
    let second = attempt(1);
    assert!(
        second.contains("resuming from ")
            && second.contains(&format!("/requeued/out/checkpoint-{stopped}\n")),
        "{second}"
    );
    // The second attempt first sends the first's lines again (the trainer's replay of its
    // checkpoint), then goes on from the step after it.
    let (again, after): (Vec<_>, Vec<_>) = after.into_iter().partition(|p| p.0 <= stopped);
    assert_same_losses(&reference[..stopped as usize], &again);
    assert_eq!(after.first().map(|p| p.0), Some(stopped + 1), "{second}");
    let rest = &reference[stopped as usize..];
    assert_same_losses(rest, &after);
}

fn assert_same_losses(a: &[(u64, f64)], b: &[(u64, f64)]) {
    assert_eq!(a.len(), b.len(), "{a:?}\n{b:?}");
    for ((step, x), (_, y)) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-4 * x.abs(), "step {step}: {a:?}\n{b:?}");
    }
}

#[test]
#[ignore = "needs root, the Slurm chroot, the trainer's environment and ../shared: run through `cargo xtask test`"]
fn multi_rank_jobs_share_a_node_and_span_two() {
    // Two jobs of two ranks each, at once, on one node of four GPUs.
    let one = cluster(1, 4);
    let jobs = Jobs::new(&one);
    let v = spec(1, 2);
    let ids = ["side-a", "side-b"].map(|name| jobs.submit(&v, name));
    onramp_tests::wait::until("both jobs to run at once", Duration::from_secs(120), || {
        let states = ids.map(|id| jobs.status(id).map(|s| s.state));
        match states {
            [Ok(JobState::Running), Ok(JobState::Running)] => Ok(Some(())),
            [Ok(a), Ok(b)] if a.is_terminal() && b.is_terminal() => {
                Err(format!("both ended before they ran together: {a:?} {b:?}"))
            }
            s => Err(format!("{s:?}")),
        }
    })
    .unwrap_or_else(|e| {
        let logs = ids.map(|id| jobs.log(id));
        panic!("{e}\n{logs:#?}\n{}", one.log_tail())
    });
    let [a, b] = ids.map(|id| jobs.losses(id));
    assert!(a[11].1 < a[0].1, "the loss did not fall: {a:?}");
    for id in ids {
        assert!(
            jobs.log(id).contains("2 rank(s)"),
            "not two ranks: {}",
            jobs.log(id)
        );
    }
    // The same spec and seed: the same run.
    assert_same_losses(&a, &b);
    requeued_mid_run_resumes_at_its_checkpoint(&jobs, &a);
    drop(jobs);
    drop(one);

    // The same spec over two nodes of one rank each trains as the two ranks of one node did.
    let two = cluster(2, 1);
    let jobs = Jobs::new(&two);
    let id = jobs.submit(&spec(2, 1), "across");
    let across = jobs.losses(id);
    let (_, job) = two.request("GET", &V.job_path(id), None);
    assert_eq!(
        job.pointer("/jobs/0/nodes"),
        Some(&"onramp[0-1]".into()),
        "{job}"
    );
    let log = jobs.log(id);
    assert!(log.contains("2 rank(s)"), "{log}");
    assert_same_losses(&a, &across);
}
