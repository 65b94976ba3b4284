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
        retention_s: edge::backends::slurm::DEFAULT_RETENTION_S,
        report: None,
        env: BTreeMap::new(),
        cpus_per_task: Some(1),
        payload: Some(payload.into()),
        requeue: true,
        stop_warning_s: 0,
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
        assert_eq!(got[0]["state"], "running", "{got:?}");
        assert_eq!(got[1]["loss"], 2.5, "{got:?}");
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

/// One backend's `work_dir` on the test cluster, shared by the jobs of the folder tests.
struct WorkDir<'a> {
    slurm: &'a Slurm,
    version: ApiVersion,
    /// The folder as the cluster sees it.
    inner: String,
    /// The same folder on this machine.
    host: std::path::PathBuf,
}

impl WorkDir<'_> {
    /// The folders in it, by name.
    fn folders(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.host)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Slurm's log of the job `id`.
    fn log(&self, id: u64) -> String {
        std::fs::read_to_string(self.host.join(format!("slurm-{id}.out"))).unwrap_or_default()
    }

    /// What the job saw in its folder when it started, as its log's `seen:` line says.
    fn seen(&self, id: u64) -> String {
        let log = self.log(id);
        log.lines()
            .find_map(|l| l.strip_prefix("seen: "))
            .unwrap_or_else(|| panic!("no seen: line in the log of {id}: {log}"))
            .to_string()
    }

    /// Submits `payload` as the edge's job `name` (a 1-day retention), and waits for its end.
    fn run(&self, spec: &jobspec::ValidSpec, name: &str, payload: &str) -> (u64, JobStatus) {
        let id = self.submit(spec, name, payload);
        (
            id,
            wait_for(self.slurm, self.version, id, |s| s.state.is_terminal()),
        )
    }

    fn submit(&self, spec: &jobspec::ValidSpec, name: &str, payload: &str) -> u64 {
        let mut o = options(self.slurm, self.version, name, payload);
        o.work_dir = self.inner.clone();
        o.retention_s = 86_400;
        submit(self.slurm, spec, &o).unwrap()
    }

    /// What an earlier day left: a folder whose job ended two days ago (past the retention), one
    /// that ended just now, one whose job still runs, an old Slurm log, and two folders of jobs
    /// that never marked their end.
    fn leave_earlier_jobs(&self) {
        let touch = |path: &std::path::Path, when: &str| {
            let ok = std::process::Command::new("touch")
                .args(["-d", when])
                .arg(path)
                .status()
                .unwrap();
            assert!(ok.success());
        };
        for (dir, ended) in [
            ("old", Some("2 days ago")),
            ("fresh", Some("now")),
            ("live", None),
        ] {
            std::fs::create_dir_all(self.host.join(dir).join("out/checkpoint-9")).unwrap();
            if let Some(when) = ended {
                touch(&self.host.join(dir).join(".onramp-ended"), when);
            }
        }
        touch(&self.host.join("slurm-999999.out"), "2 days ago");
        // Jobs killed before they could mark their end: one untouched for a month (past the
        // retention and a week more) and one from just now.
        for dir in ["dead", "beef"] {
            std::fs::create_dir_all(self.host.join(dir).join("out/checkpoint-9")).unwrap();
        }
        for path in ["dead/out/checkpoint-9", "dead/out", "dead"] {
            touch(&self.host.join(path), "30 days ago");
        }
    }
}

/// Each job says what its folder held when it started, waits for `gate` (so that two jobs run
/// at the same time before they write), writes a "checkpoint" and a spec of its own (as
/// onramp-train and the generated script would), and says what it sees then.
fn folder_payload(gate: &str) -> String {
    format!(
        "echo \"dir: $PWD\"\n\
         echo \"seen: $(ls -A | grep -v '^onramp-' | sort | tr '\\n' ' ')\"\n\
         while [ ! -e {gate} ]; do sleep 0.2; done\n\
         mkdir -p out/checkpoint-5 && echo \"$ONRAMP_JOB_ID\" > out/checkpoint-5/owner\n\
         echo '{{}}' > out/checkpoint-5/trainer_state.json\n\
         echo \"$ONRAMP_JOB_ID\" > spec.toml\n\
         echo \"after: $(cat out/*/owner spec.toml | sort -u | tr '\\n' ' ')\"\n"
    )
}

#[test]
#[ignore = "needs root and the Slurm chroot: run through `cargo xtask test`"]
fn every_job_works_in_a_folder_of_its_own() {
    let slurm = Slurm::start(2).unwrap();
    let inner = slurm.job_dir("shared-work").unwrap();
    let w = WorkDir {
        slurm: &slurm,
        version: ApiVersion::V0042,
        host: slurm.host_path(&inner),
        inner,
    };
    w.leave_earlier_jobs();
    let gate = format!("{}/go", slurm.job_dir("gate").unwrap());
    two_jobs_at_once_see_only_their_own_folders(&w, &gate);
    // The job that ended past the retention is gone, with the old Slurm log; the rest stay.
    assert_eq!(w.folders(), ["a1b2", "beef", "c3d4", "fresh", "live"]);
    assert!(!w.host.join("slurm-999999.out").exists());
    // What a job writes is its owner's only, on storage other users of the cluster share.
    for path in ["a1b2", "a1b2/out/checkpoint-5/owner", "c3d4/spec.toml"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(w.host.join(path))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{path}: {mode:o}");
    }
    // The same job id again (a requeue runs the same script): it finds its own checkpoint and
    // nobody else's; a new job after both starts empty.
    let tiny = jobspec::validate_toml(TINY).0.unwrap();
    let (again, s) = w.run(&tiny, "a1b2", &folder_payload(&gate));
    assert_eq!(s.state, JobState::Succeeded, "{s:?}");
    let (later, s) = w.run(&tiny, "e5f6", &folder_payload(&gate));
    assert_eq!(s.state, JobState::Succeeded, "{s:?}");
    assert_eq!(w.seen(again), "out spec.toml ");
    assert_eq!(w.seen(later), "");
    a_job_continues_only_from_a_checkpoint_it_names(&w);
}

fn two_jobs_at_once_see_only_their_own_folders(w: &WorkDir<'_>, gate: &str) {
    let tiny = jobspec::validate_toml(TINY).0.unwrap();
    let payload = folder_payload(gate);
    let names = ["a1b2", "c3d4"];
    let ids = names.map(|name| w.submit(&tiny, name, &payload));
    for id in ids {
        wait_for(w.slurm, w.version, id, |s| s.state == JobState::Running);
    }
    std::fs::write(w.slurm.host_path(gate), "").unwrap();
    for (name, id) in names.into_iter().zip(ids) {
        let s = wait_for(w.slurm, w.version, id, |s| s.state.is_terminal());
        assert_eq!(s.state, JobState::Succeeded, "{s:?}");
        let log = w.log(id);
        assert!(log.contains(&format!("dir: {}/{name}\n", w.inner)), "{log}");
        assert!(
            log.contains(&format!("after: {name} \n")),
            "{name} saw only itself: {log}"
        );
        assert_eq!(w.seen(id), "", "{name} started in an empty folder");
        // Its log stays in its folder, with the mark that starts its retention.
        let own = w.host.join(name);
        assert!(own.join(".onramp-ended").is_file(), "{}", own.display());
        let kept = std::fs::read_to_string(own.join(format!("onramp-{id}.0.log"))).unwrap();
        assert!(kept.contains(&format!("after: {name} ")), "{kept}");
    }
}

/// A job that names a1b2 in `checkpoint.resume_from` starts with a1b2's latest checkpoint in its
/// own out/, and a1b2's folder is left as it was; one naming a job that left nothing fails at
/// once, before its command runs.
fn a_job_continues_only_from_a_checkpoint_it_names(w: &WorkDir<'_>) {
    let lora = |from: &str| {
        let toml = format!(
            "{}[checkpoint]\nresume_from = \"{from}\"\n",
            onramp_tests::specs::lora_cpu("continued", "slurm")
        );
        let (v, diags) = jobspec::validate_toml(&toml);
        v.unwrap_or_else(|| panic!("{diags:?}"))
    };
    let payload = "echo \"seen: $(ls -A | grep -v '^onramp-' | sort | tr '\\n' ' ')\"\n\
                   echo \"owner: $(cat out/checkpoint-5/owner)\"\n";
    // A later save that a kill cut off (no trainer_state.json, which the Trainer writes last) is
    // not continued from: the last whole one is.
    let cut = w.host.join("a1b2/out/checkpoint-7");
    std::fs::create_dir_all(&cut).unwrap();
    std::fs::write(cut.join("owner"), "cut off\n").unwrap();
    let (continued, s) = w.run(&lora("a1b2"), "f7a8", payload);
    assert_eq!(s.state, JobState::Succeeded, "{s:?}");
    assert_eq!(w.seen(continued), "out ");
    assert!(
        w.log(continued).contains("owner: a1b2\n"),
        "{}",
        w.log(continued)
    );
    assert!(w.host.join("a1b2/out/checkpoint-5/owner").is_file());
    let (orphan, s) = w.run(&lora("0bad"), "f9b0", payload);
    assert_eq!((s.state, s.exit_code), (JobState::Failed, Some(1)), "{s:?}");
    assert!(
        !w.log(orphan).contains("seen:"),
        "the command ran: {}",
        w.log(orphan)
    );
}

/// A job the cluster suspends (`scontrol suspend`, as its operator or gang scheduling does) has
/// run only while it was not: the adapter takes the suspension out of the job's span (what the
/// edge bills). One cancelled while suspended ends at its suspension.
#[test]
#[ignore = "needs root and the Slurm chroot: run through `cargo xtask test`"]
fn a_suspended_job_has_run_only_while_it_was_not() {
    const HELD_S: i64 = 8;
    let slurm = Slurm::start(2).unwrap();
    let tiny = jobspec::validate_toml(TINY).0.unwrap();
    let v = ApiVersion::V0040;
    // Six naps of a second: the one the suspension cuts ends at the resume, the rest run.
    let naps = "for i in 1 2 3 4 5 6; do sleep 1; done";
    let resumed = submit(&slurm, &tiny, &options(&slurm, v, "resumed", naps)).unwrap();
    let cancelled = submit(&slurm, &tiny, &options(&slurm, v, "cancelled", "sleep 300")).unwrap();
    for id in [resumed, cancelled] {
        wait_for(&slurm, v, id, |s| s.state == JobState::Running);
        slurm.scontrol(&["suspend", &id.to_string()]).unwrap();
    }
    for id in [resumed, cancelled] {
        onramp_tests::wait::until(
            &format!("job {id} suspended for {HELD_S} s"),
            Duration::from_secs(60),
            || Ok(slurm.suspended_for(id).filter(|s| *s >= HELD_S)),
        )
        .unwrap_or_else(|e| panic!("{e}\n{}", slurm.log_tail()));
    }
    slurm.scontrol(&["resume", &resumed.to_string()]).unwrap();
    let (code, answer) = slurm.request("DELETE", &v.job_path(cancelled), None);
    assert_eq!(code, 200, "{answer}");

    let s = wait_for(&slurm, v, resumed, |s| s.state.is_terminal());
    assert_eq!(s.state, JobState::Succeeded, "{s:?}");
    let span = s.end_time.unwrap() - s.start_time.unwrap();
    let ran = span - s.suspended_s;
    assert!(
        s.suspended_s >= HELD_S && (3..=8).contains(&ran),
        "ran {ran} s of a {span} s span, suspended {} s: {s:?}",
        s.suspended_s
    );
    let s = wait_for(&slurm, v, cancelled, |s| s.state.is_terminal());
    assert_eq!((s.state, s.suspended_s), (JobState::Cancelled, 0), "{s:?}");
    let span = s.end_time.unwrap() - s.start_time.unwrap();
    assert!(span < HELD_S, "a {span} s span: {s:?}");
}
