//! The edge's Slurm adapter against a real Slurm (slurmctld, slurmd, slurmrestd with JWT, fake
//! GPUs through GRES): jobs built from specs are accepted by every data parser the adapter speaks
//! that this slurmrestd lists in its `/openapi/v3` (v0.0.40 to v0.0.42 for Slurm 24.11), run, report to the edge by themselves and end with mapped states and exit codes; a
//! job that needs GPUs that are taken waits with a clear reason; one that needs more GPUs than the
//! cluster has is refused with Slurm's reason; cancel works.
//!
//! Needs root and the Slurm chroot (`cargo xtask setup` builds it once per machine): ignored in a
//! plain `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use api::JobState;
use edge::backends::slurm::{
    ApiVersion, JobStatus, ReportHook, SubmitOptions, parse_job, parse_submit, submit_body,
};
use onramp_tests::runner::ReportSink;
use onramp_tests::slurm::Slurm;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const TINY: &str = include_str!("../../../jobspec/specs/tiny-train-stories260k.toml");

/// A spec asking for `gpus` RTX 4090s on one node, for a short time.
fn gpu_spec(gpus: u32) -> jobspec::ValidSpec {
    let toml = format!(
        "name = \"gpu-probe\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\n\
         [data]\ndataset = \"alpaca-zh\"\ntokens = 100000\nseq_len = 512\n\
         [train]\nsteps = 10\nmicro_batch = 1\nlr = 2e-4\nlora_rank = 8\n\
         [resources]\ncard = \"rtx-4090\"\ncards_per_node = {gpus}\nnodes = 1\ntime_limit = \"2h\"\n"
    );
    let (v, diags) = jobspec::validate_toml(&toml);
    v.unwrap_or_else(|| panic!("{diags:?}"))
}

fn options(slurm: &Slurm, version: ApiVersion, name: &str, payload: &str) -> SubmitOptions {
    SubmitOptions {
        version,
        job_id: name.into(),
        partition: Some("debug".into()),
        work_dir: slurm.job_dir(name).expect("a job folder"),
        report: None,
        env: BTreeMap::new(),
        cpus_per_task: Some(1),
        payload: Some(payload.into()),
    }
}

fn submit(slurm: &Slurm, v: &jobspec::ValidSpec, o: &SubmitOptions) -> Result<u64, String> {
    let body = submit_body(v, o)?;
    let (status, answer) = slurm.request("POST", &o.version.submit_path(), Some(&body));
    if status == 0 {
        return Err(format!("slurmrestd unreachable: {answer}"));
    }
    parse_submit(&answer)
}

fn status(slurm: &Slurm, version: ApiVersion, id: u64) -> Result<JobStatus, String> {
    let (code, body) = slurm.request("GET", &version.job_path(id), None);
    if code != 200 {
        return Err(format!("HTTP {code}: {body}"));
    }
    parse_job(&body)
}

fn wait_for(
    slurm: &Slurm,
    version: ApiVersion,
    id: u64,
    pred: impl Fn(&JobStatus) -> bool,
) -> JobStatus {
    onramp_tests::wait::until(&format!("Slurm job {id}"), Duration::from_secs(60), || {
        let s = status(slurm, version, id)?;
        if pred(&s) {
            Ok(Some(s))
        } else {
            Err(format!("{s:?}"))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", slurm.log_tail()))
}

#[test]
#[ignore = "needs root and the Slurm chroot: run through `cargo xtask test`"]
fn jobs_run_report_and_end_with_mapped_states_on_every_data_parser() {
    let slurm = Slurm::start(2).unwrap();
    let sink = ReportSink::start().unwrap();
    let tiny = jobspec::validate_toml(TINY).0.unwrap();
    let metrics_line =
        r#"{"step":1,"loss":2.5,"val_loss":null,"lr":0.001,"tokens_per_s":100.0,"elapsed_s":0.5}"#;
    let (status, doc) = slurm.request("GET", edge::backends::slurm::OPENAPI_PATH, None);
    assert_eq!(status, 200, "{doc}");
    let versions = edge::backends::slurm::served(&doc).unwrap();
    assert!(versions.contains(&ApiVersion::V0040), "{versions:?}");
    for (i, version) in versions.into_iter().enumerate() {
        let name = format!("ok-{i}");
        let mut o = options(
            &slurm,
            version,
            &name,
            &format!(
                "echo \"hello from $ONRAMP_JOB_ID gpus=[${{CUDA_VISIBLE_DEVICES:-}}] url=[${{ONRAMP_REPORT_URL:-}}]\"\necho '{metrics_line}'"
            ),
        );
        o.report = Some(ReportHook {
            url: format!("{}/{name}", sink.url),
            // No log pushing here: the sink records reports only (slurm_edge.rs covers logs).
            log_url: String::new(),
            token: format!("tok-{name}"),
        });
        let id = submit(&slurm, &tiny, &o).unwrap();
        let s = wait_for(&slurm, version, id, |s| s.state.is_terminal());
        assert_eq!(
            (s.state, s.exit_code),
            (JobState::Succeeded, Some(0)),
            "{version:?}: {s:?}"
        );
        assert_eq!(s.slurm_state, "COMPLETED");
        assert!(s.start_time.is_some() && s.end_time.is_some(), "{s:?}");
        let log_path = slurm.host_path(&format!("{}/slurm-{id}.out", o.work_dir));
        let log = std::fs::read_to_string(&log_path).unwrap();
        // The report URL and token are kept from the training command.
        assert!(
            log.contains(&format!("hello from {name} gpus=[] url=[]")),
            "{log}"
        );
        let got = onramp_tests::wait::until("the job's reports", Duration::from_secs(20), || {
            let mine: Vec<Value> = sink
                .received()
                .into_iter()
                .filter(|r| r.path.ends_with(&name))
                .inspect(|r| {
                    assert_eq!(
                        r.authorization.as_deref(),
                        Some(format!("Bearer tok-{name}").as_str())
                    )
                })
                .map(|r| r.body)
                .collect();
            Ok((mine.len() >= 3).then_some(mine))
        })
        .unwrap();
        assert_eq!(got[0], serde_json::json!({"state": "running"}), "{got:?}");
        assert_eq!(got[1]["metrics"][0]["loss"], 2.5, "{got:?}");
        assert_eq!(got[2], serde_json::json!({"state": "succeeded"}), "{got:?}");
    }

    // A failing command ends failed with its exit code, and says so to the edge.
    let mut o = options(
        &slurm,
        ApiVersion::V0041,
        "fails",
        "echo about to fail\nexit 3",
    );
    o.report = Some(ReportHook {
        url: format!("{}/fails", sink.url),
        log_url: String::new(),
        token: "t".into(),
    });
    let id = submit(&slurm, &tiny, &o).unwrap();
    let s = wait_for(&slurm, ApiVersion::V0041, id, |s| s.state.is_terminal());
    assert_eq!(
        (s.state, s.exit_code, s.slurm_state.as_str()),
        (JobState::Failed, Some(3), "FAILED"),
        "{s:?}"
    );
    assert_eq!(s.message.unwrap().0, "exited with code 3");
    onramp_tests::wait::until("the failure report", Duration::from_secs(20), || {
        Ok(sink
            .received()
            .iter()
            .any(|r| {
                r.path.ends_with("fails")
                    && r.body["state"] == "failed"
                    && r.body["message"] == "exited with code 3"
            })
            .then_some(()))
    })
    .unwrap();
}

#[test]
#[ignore = "needs root and the Slurm chroot: run through `cargo xtask test`"]
fn gpu_counts_gate_scheduling_and_cancel_stops_jobs() {
    let slurm = Slurm::start(2).unwrap();
    let v = ApiVersion::V0042;
    // Both fake GPUs taken by a long job, which sees them.
    let first = options(
        &slurm,
        v,
        "holder",
        "echo gpus=$CUDA_VISIBLE_DEVICES\nsleep 300",
    );
    let holder = submit(&slurm, &gpu_spec(2), &first).unwrap();
    let s = wait_for(&slurm, v, holder, |s| s.state == JobState::Running);
    assert_eq!(s.slurm_state, "RUNNING");
    let log_path = slurm.host_path(&format!("{}/slurm-{holder}.out", first.work_dir));
    onramp_tests::wait::until("the job to see its GPUs", Duration::from_secs(20), || {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        Ok(log.contains("gpus=0,1").then_some(()))
    })
    .unwrap();

    // A second two-GPU job waits, and says why.
    let waiting = submit(
        &slurm,
        &gpu_spec(2),
        &options(&slurm, v, "waiter", "echo ran"),
    )
    .unwrap();
    let s = wait_for(&slurm, v, waiting, |s| {
        s.reason.as_deref() == Some("Resources")
    });
    assert_eq!(s.state, JobState::Queued);
    let (en, zh) = s.message.unwrap();
    assert!(en.contains("not enough free GPUs"), "{en}");
    assert!(zh.contains("GPU"), "{zh}");

    // More GPUs than the cluster has can never run: Slurm refuses it at once.
    let err = submit(
        &slurm,
        &gpu_spec(3),
        &options(&slurm, v, "toobig", "echo never"),
    )
    .unwrap_err();
    assert!(
        err.contains("Requested node configuration is not available"),
        "{err}"
    );

    // Cancel the holder: it ends cancelled, and the waiting job gets the GPUs and completes.
    let (code, body) = slurm.request("DELETE", &v.job_path(holder), None);
    assert_eq!(code, 200, "{body}");
    let s = wait_for(&slurm, v, holder, |s| s.state.is_terminal());
    assert_eq!(
        (s.state, s.slurm_state.as_str()),
        (JobState::Cancelled, "CANCELLED"),
        "{s:?}"
    );
    let s = wait_for(&slurm, v, waiting, |s| s.state.is_terminal());
    assert_eq!(s.state, JobState::Succeeded, "{s:?}");
}
