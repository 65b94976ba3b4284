//! The slurmrestd job-submit request (`POST /slurm/v0.0.4x/job/submit`): the script, the
//! resources (nodes, CPUs, GPUs through GRES), the time limit, the environment, the working
//! directory and the log paths, in the `job_desc_msg` shape that data parsers v0.0.40 to v0.0.42
//! share.

use super::script::{ReportHook, job_script};
use super::version::ApiVersion;
use jobspec::ValidSpec;
use jobspec::launch::safe_name;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// What the deployment and the edge decide about a submission, beyond the spec.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmitOptions {
    pub version: ApiVersion,
    /// The edge's job id: in the job's name and its `ONRAMP_JOB_ID`.
    pub job_id: String,
    /// The partition, when the cluster wants one named.
    pub partition: Option<String>,
    /// The backend's folder on the cluster's shared storage (absolute): where Slurm's log files
    /// go, and every job's own folder, `<work_dir>/<job id>`, which the job script creates and
    /// works in.
    pub work_dir: String,
    /// How long a job's folder stays after the job ended, in seconds (the job script of a later
    /// job removes it).
    pub retention_s: u64,
    pub report: Option<ReportHook>,
    /// Extra environment (e.g. `ONRAMP_SHARED` for tiny-train's models and corpora).
    pub env: BTreeMap<String, String>,
    /// CPUs per task; `None` takes the spec's (8 per GPU, 4 for CPU jobs).
    pub cpus_per_task: Option<u32>,
    /// Replaces the spec's launch command in the script (a custom command).
    pub payload: Option<String>,
    /// Whether Slurm may requeue the job (a failed node, a preemption, `scontrol requeue`).
    pub requeue: bool,
    /// How long before the time limit Slurm warns the job with SIGTERM (0: no warning); the
    /// job gets at most half its limit.
    pub stop_warning_s: u64,
}

/// `PATH` of every job: the system's, so that `curl`, `srun` and the training tools are found.
pub const JOB_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The job's log (stdout and stderr), `%j` being Slurm's job id. Slurm does not serve output
/// over HTTP: the edge's reader finds it here, on the shared storage.
pub fn log_path(work_dir: &str) -> String {
    format!("{}/slurm-%j.out", work_dir.trim_end_matches('/'))
}

/// Where a job finds its node's NVMe folder (a backend's `nvme_path`).
pub const NVME_PATH_ENV: &str = "ONRAMP_NVME_PATH";

/// The catalogue models a job may load by running their repo's code (a backend's
/// `trust_remote_code`, comma-separated).
pub const TRUST_REMOTE_CODE_ENV: &str = "ONRAMP_TRUST_REMOTE_CODE";

/// Variables the edge sets for every job, which no configuration may replace: the report hooks,
/// `PATH`, those that say where the job works (a shared `ONRAMP_OUTPUT_DIR` would put every
/// job's checkpoints in one folder again), the NVMe folder (set by `nvme_path`) and the models
/// allowed to run their own code (set by `trust_remote_code`).
pub fn is_reserved_env(name: &str) -> bool {
    name.starts_with("ONRAMP_REPORT_")
        || [
            "ONRAMP_LOG_URL",
            "PATH",
            "ONRAMP_JOB_ID",
            "ONRAMP_JOB_DIR",
            "ONRAMP_WORK_DIR",
            "ONRAMP_RETENTION_S",
            STOP_WARNING_ENV,
            "ONRAMP_OUTPUT_DIR",
            "ONRAMP_RESUME_DIR",
            NVME_PATH_ENV,
            TRUST_REMOTE_CODE_ENV,
        ]
        .contains(&name)
}

/// How long before its time limit a job is warned when the backend sets no `stop_warning`.
pub const DEFAULT_STOP_WARNING_S: u64 = 300;

/// Where the job's script finds its warning (seconds), to tell a stop at the time limit from a
/// requeue's or a cancel's.
pub const STOP_WARNING_ENV: &str = "ONRAMP_STOP_WARNING_S";

/// How long a job's folder stays after the job ended when the backend sets no `retention`.
pub const DEFAULT_RETENTION_S: u64 = 7 * 86_400;

/// What the job finds in its environment: where it works, what it continues, how it reaches the
/// edge and the backend's own variables (none of the edge's names).
fn job_environment(v: &ValidSpec, o: &SubmitOptions) -> Result<Vec<String>, String> {
    let work_dir = o.work_dir.trim_end_matches('/');
    let mut env = vec![
        format!("PATH={JOB_PATH}"),
        format!("ONRAMP_JOB_ID={}", o.job_id),
        format!("ONRAMP_WORK_DIR={work_dir}"),
        format!("ONRAMP_JOB_DIR={work_dir}/{}", o.job_id),
        format!("ONRAMP_RETENTION_S={}", o.retention_s),
    ];
    // A job that continues an earlier one (the edge checked it is the same account's, and that
    // it ran here) starts from the latest checkpoint in that job's folder.
    if let Some(id) = &v.spec().checkpoint.resume_from {
        if !jobspec::validate::is_job_id(id) {
            return Err(format!(
                "checkpoint.resume_from {id:?} cannot name a folder"
            ));
        }
        env.push(format!("ONRAMP_RESUME_DIR={work_dir}/{id}"));
    }
    if let Some(r) = &o.report {
        env.push(format!("ONRAMP_REPORT_URL={}", r.url));
        env.push(format!("ONRAMP_LOG_URL={}", r.log_url));
        env.push(format!("ONRAMP_REPORT_TOKEN={}", r.token));
    }
    for (k, val) in &o.env {
        let ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !is_reserved_env(k);
        if !ok {
            return Err(format!("environment name {k:?} is not allowed"));
        }
        env.push(format!("{k}={val}"));
    }
    Ok(env)
}

/// The job's warning before its time limit, in seconds (0: none). Only onramp-train saves and
/// stops on it: tiny-train and a command of the job's own would just end early. At most half
/// the limit, and what Slurm's 16 bits hold.
fn stop_warning_s(v: &ValidSpec, o: &SubmitOptions, limit_min: u64) -> u64 {
    if v.spec().task == jobspec::spec::Task::TinyTrain || o.payload.is_some() {
        return 0;
    }
    o.stop_warning_s
        .min(limit_min.saturating_mul(60) / 2)
        .min(u64::from(u16::MAX))
}

/// The request body. Errors name the option at fault.
pub fn submit_body(v: &ValidSpec, o: &SubmitOptions) -> Result<Value, String> {
    if !o.work_dir.starts_with('/') || o.work_dir.contains(['\n', '\0']) {
        return Err(format!(
            "work_dir {:?} must be an absolute path on the cluster",
            o.work_dir
        ));
    }
    if o.job_id.is_empty()
        || !o
            .job_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!("job id {:?} cannot name a folder", o.job_id));
    }
    let mut env = job_environment(v, o)?;
    let s = v.spec();
    let r = &s.resources;
    let gpu = v.card().is_gpu;
    let cpus = o
        .cpus_per_task
        .unwrap_or(if gpu { 8 * r.cards_per_node } else { 4 });
    let log = log_path(&o.work_dir);
    // Slurm counts minutes; a limit is never rounded down below what the spec allows.
    let limit_min = v.time_limit_s().div_ceil(60).max(1);
    let warning_s = stop_warning_s(v, o, limit_min);
    if warning_s > 0 {
        env.push(format!("{STOP_WARNING_ENV}={warning_s}"));
    }
    let mut job = json!({
        "name": format!("{}-{}", safe_name(&s.name), safe_name(&o.job_id)),
        "script": job_script(v, o.payload.as_deref()),
        "current_working_directory": o.work_dir,
        "environment": env,
        "standard_output": log,
        "standard_error": log,
        "minimum_nodes": r.nodes,
        "maximum_nodes": r.nodes,
        "tasks_per_node": 1,
        "cpus_per_task": cpus,
        "requeue": o.requeue,
        "time_limit": {"set": true, "infinite": false, "number": limit_min},
    });
    if warning_s > 0 {
        // SIGTERM, the warning's time before the limit, to the training: a GPU job's runs in a
        // step of its own (srun), which is what Slurm signals by default, never srun itself in
        // the batch script (srun would kill its step at once); a CPU job's runs in the batch
        // script, whose every process then gets it (`FULL_JOB`), as at the time limit itself.
        job["kill_warning_signal"] = json!("SIGTERM");
        if !gpu {
            job["kill_warning_flags"] = json!(["FULL_JOB"]);
        }
        job["kill_warning_delay"] = json!({"set": true, "infinite": false, "number": warning_s});
    }
    if gpu {
        job["tres_per_node"] = json!(format!("gres/gpu:{}", r.cards_per_node));
    }
    if let Some(p) = &o.partition {
        job["partition"] = json!(p);
    }
    Ok(json!({ "job": job }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::slurm::script::tests::{GPU, TINY, valid};
    use expect_test::expect;

    fn options(version: ApiVersion) -> SubmitOptions {
        SubmitOptions {
            version,
            job_id: "job_01H".into(),
            partition: Some("gpu".into()),
            work_dir: "/shared/onramp".into(),
            retention_s: DEFAULT_RETENTION_S,
            report: Some(ReportHook {
                url: "https://onramp.example/api/jobs/job_01H/report".into(),
                log_url: "https://onramp.example/api/jobs/job_01H/log".into(),
                token: "tok".into(),
            }),
            env: BTreeMap::from([("HF_HOME".into(), "/shared/hf".into())]),
            cpus_per_task: None,
            payload: None,
            requeue: true,
            stop_warning_s: DEFAULT_STOP_WARNING_S,
        }
    }

    /// The body without the script (snapshotted on its own in `script`).
    fn body_without_script(v: &ValidSpec, o: &SubmitOptions) -> String {
        let mut b = submit_body(v, o).unwrap();
        b["job"]["script"] = json!("…");
        serde_json::to_string_pretty(&b).unwrap()
    }

    #[test]
    fn a_gpu_job_asks_for_its_gpus_through_gres() {
        let expected = expect![[r#"
            {
              "job": {
                "cpus_per_task": 8,
                "current_working_directory": "/shared/onramp",
                "environment": [
                  "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                  "ONRAMP_JOB_ID=job_01H",
                  "ONRAMP_WORK_DIR=/shared/onramp",
                  "ONRAMP_JOB_DIR=/shared/onramp/job_01H",
                  "ONRAMP_RETENTION_S=604800",
                  "ONRAMP_REPORT_URL=https://onramp.example/api/jobs/job_01H/report",
                  "ONRAMP_LOG_URL=https://onramp.example/api/jobs/job_01H/log",
                  "ONRAMP_REPORT_TOKEN=tok",
                  "HF_HOME=/shared/hf",
                  "ONRAMP_STOP_WARNING_S=300"
                ],
                "kill_warning_delay": {
                  "infinite": false,
                  "number": 300,
                  "set": true
                },
                "kill_warning_signal": "SIGTERM",
                "maximum_nodes": 1,
                "minimum_nodes": 1,
                "name": "qwen2.5-7b-lora-4090-job_01H",
                "partition": "gpu",
                "requeue": true,
                "script": "…",
                "standard_error": "/shared/onramp/slurm-%j.out",
                "standard_output": "/shared/onramp/slurm-%j.out",
                "tasks_per_node": 1,
                "time_limit": {
                  "infinite": false,
                  "number": 1440,
                  "set": true
                },
                "tres_per_node": "gres/gpu:1"
              }
            }"#]];
        // The three data parsers share this shape; only the URL differs.
        for version in ApiVersion::ALL {
            expected.assert_eq(&body_without_script(&valid(GPU), &options(version)));
        }
    }

    #[test]
    fn a_cpu_job_asks_for_no_gpus_and_rounds_its_limit_up() {
        let mut o = options(ApiVersion::V0041);
        o.partition = None;
        o.report = None;
        o.cpus_per_task = Some(1);
        let toml = TINY.replace("time_limit = \"30m\"", "time_limit = \"61s\"");
        let b = submit_body(&valid(&toml), &o).unwrap();
        assert!(b["job"].get("tres_per_node").is_none(), "{b}");
        assert!(b["job"].get("partition").is_none(), "{b}");
        assert_eq!(b["job"]["time_limit"]["number"], 2);
        assert_eq!(b["job"]["cpus_per_task"], 1);
        let env = b["job"]["environment"].to_string();
        assert!(!env.contains("ONRAMP_REPORT"), "{env}");
    }

    #[test]
    fn the_stop_warning_comes_before_the_limit_at_most_halfway_and_can_be_off() {
        let warned = |limit: &str, warning_s: u64| {
            let mut o = options(ApiVersion::V0042);
            o.stop_warning_s = warning_s;
            let toml = GPU.replace("time_limit = \"24h\"", &format!("time_limit = \"{limit}\""));
            let b = submit_body(&valid(&toml), &o).unwrap();
            let env = b["job"]["environment"].to_string();
            let delay = b["job"]["kill_warning_delay"]["number"].as_u64();
            if let Some(d) = delay {
                assert_eq!(b["job"]["kill_warning_signal"], "SIGTERM");
                // The GPU job's step, not srun in its batch script.
                assert!(b["job"].get("kill_warning_flags").is_none(), "{b}");
                assert!(
                    env.contains(&format!("\"{STOP_WARNING_ENV}={d}\"")),
                    "{env}"
                );
            } else {
                assert!(b["job"].get("kill_warning_signal").is_none(), "{b}");
                assert!(!env.contains(STOP_WARNING_ENV), "{env}");
            }
            delay
        };
        assert_eq!(warned("2h", DEFAULT_STOP_WARNING_S), Some(300));
        // Half of the 3 minutes Slurm gives a 150 s limit.
        assert_eq!(warned("150s", DEFAULT_STOP_WARNING_S), Some(90));
        assert_eq!(warned("2h", 0), None);
        // A CPU job trains in its batch script: every process of it gets the warning.
        let cpu = GPU
            .replace("model = \"qwen2.5-7b\"", "model = \"stories260K\"")
            .replace("card = \"rtx-4090\"", "card = \"cpu\"");
        let b = submit_body(&valid(&cpu), &options(ApiVersion::V0042)).unwrap();
        assert_eq!(b["job"]["kill_warning_flags"], json!(["FULL_JOB"]), "{b}");
        // Neither tiny-train nor a command of the job's own saves on it.
        let mut o = options(ApiVersion::V0042);
        let tiny = submit_body(&valid(TINY), &o).unwrap();
        assert!(tiny["job"].get("kill_warning_delay").is_none(), "{tiny}");
        o.payload = Some("sleep 60".into());
        let own = submit_body(&valid(GPU), &o).unwrap();
        assert!(own["job"].get("kill_warning_delay").is_none(), "{own}");
        let mut o = options(ApiVersion::V0042);
        o.env.insert(STOP_WARNING_ENV.into(), "1".into());
        assert!(
            submit_body(&valid(TINY), &o)
                .unwrap_err()
                .contains(STOP_WARNING_ENV)
        );
    }

    #[test]
    fn bad_options_are_refused_by_name() {
        let mut o = options(ApiVersion::V0040);
        o.work_dir = "relative/dir".into();
        assert!(
            submit_body(&valid(TINY), &o)
                .unwrap_err()
                .contains("work_dir")
        );
        let mut o = options(ApiVersion::V0040);
        o.env.insert("ONRAMP_REPORT_TOKEN".into(), "x".into());
        assert!(
            submit_body(&valid(TINY), &o)
                .unwrap_err()
                .contains("ONRAMP_REPORT_TOKEN")
        );
    }
}
