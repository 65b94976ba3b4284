//! The job script run under bash as Slurm would run it, against a stand-in edge that records
//! what the job sends it.

use super::{TINY, valid};
use crate::backends::slurm::script::job_script;
/// Every POST the stand-in edge got: its path and body.
type Posts = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A stand-in for the edge that records every POST it gets.
struct Recorder {
    url: String,
    posts: Posts,
}

impl Recorder {
    fn start() -> Recorder {
        Recorder::dropping(0)
    }

    /// One whose first `dropped` requests get a 503 (as a proxy that dropped them would
    /// answer), and are not recorded.
    fn dropping(dropped: usize) -> Recorder {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let posts = Posts::default();
        let seen = posts.clone();
        std::thread::spawn(move || {
            for (i, stream) in listener.incoming().flatten().enumerate() {
                let mut r = BufReader::new(stream);
                let (mut path, mut len, mut head) = (String::new(), 0usize, String::new());
                while r.read_line(&mut head).is_ok_and(|n| n > 0) {
                    let line = std::mem::take(&mut head);
                    let lower = line.to_ascii_lowercase();
                    if let Some(p) = line.strip_prefix("POST ") {
                        path = p.split(' ').next().unwrap_or_default().to_string();
                    } else if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    } else if lower.starts_with("expect: 100-continue") {
                        let _ = r.get_mut().write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
                    } else if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; len];
                let read = r.read_exact(&mut body).is_ok();
                let answer: &[u8] = if i < dropped {
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    if read {
                        seen.lock().expect("lock").push((path, body));
                    }
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                };
                let _ = r.get_mut().write_all(answer);
            }
        });
        Recorder { url, posts }
    }

    /// The log as the edge would store it: every chunk at its offset.
    fn log(&self) -> Vec<u8> {
        let mut log = Vec::new();
        for (path, body) in self.posts.lock().expect("lock").iter() {
            let Some(off) = path.split("?offset=").nth(1) else {
                continue;
            };
            let (off, attempt) = off.split_once("&attempt=").expect("attempt");
            assert_eq!(attempt, "0", "outside Slurm a job is its first attempt");
            let off: usize = off.parse().expect("offset");
            assert!(
                off <= log.len(),
                "a chunk at {off} leaves a gap after {}",
                log.len()
            );
            log.truncate(off);
            log.extend_from_slice(body);
        }
        log
    }

    fn reports(&self) -> Vec<String> {
        let posts = self.posts.lock().expect("lock");
        posts
            .iter()
            .filter(|(p, _)| p == "/report")
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect()
    }
}

/// What Slurm does to a job at its time limit or on cancel, done to the script under bash:
/// SIGTERM to every process of the job. The command stops; the log the edge gets is then the
/// whole of what the job printed (the same bytes as its Slurm log file, here its stdout), not
/// all but the last 2 s; and the script reports no state of its own.
#[test]
fn a_job_stopped_by_sigterm_still_ships_its_whole_log() {
    use std::os::unix::process::CommandExt;
    let edge = Recorder::start();
    // A line every 20 ms, so there is always output younger than the shipper's 2 s round.
    let payload = "i=0; while :; do i=$((i+1)); echo \"line $i\"; sleep 0.02; done";
    let script = job_script(&valid(TINY), Some(payload));
    let dir = std::env::temp_dir().join(format!("onramp-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("slurm.out");
    let mut job = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("ONRAMP_REPORT_URL", format!("{}/report", edge.url))
        .env("ONRAMP_LOG_URL", format!("{}/log", edge.url))
        .env("ONRAMP_REPORT_TOKEN", "t0k3n")
        .env("ONRAMP_JOB_DIR", dir.join("job"))
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .process_group(0)
        .spawn()
        .expect("bash");
    let group = format!("-{}", job.id());
    // Whatever happens below, nothing of the job outlives the test.
    struct KillOnDrop<'a>(&'a str);
    impl Drop for KillOnDrop<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", self.0])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
    let _cleanup = KillOnDrop(&group);
    // Once the job has printed for a while (and shipped at least one round), stop it.
    let started = std::time::Instant::now();
    while edge.log().len() < 200 {
        assert!(
            started.elapsed().as_secs() < 30,
            "the job never shipped its log"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let killed = std::process::Command::new("kill")
        .args(["-TERM", "--", &group])
        .status()
        .expect("kill");
    assert!(killed.success());
    // The script has Slurm's grace period to finish (30 s by default), then it is killed.
    let stopped = std::time::Instant::now();
    let status = loop {
        if let Some(status) = job.try_wait().expect("the job's status") {
            break status;
        }
        assert!(
            stopped.elapsed().as_secs() < 30,
            "the script did not finish within 30 s of SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let printed = std::fs::read(&out).expect("stdout");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        status.code(),
        Some(143),
        "the job keeps the command's status"
    );
    assert!(
        printed.ends_with(b"\n") && printed.len() > 200,
        "{printed:?}"
    );
    assert_eq!(
        String::from_utf8_lossy(&edge.log()),
        String::from_utf8_lossy(&printed),
        "the edge's copy of the log differs from what the job printed"
    );
    assert_eq!(edge.reports(), [r#"{"state":"running","attempt":0}"#]);
}

/// A job whose output tries to close the metrics array early and add a state of its own:
/// the line reaches the edge as it is, alone in its report's body, where it can only be
/// read as one metric point (`metric_points::parse_metric_lines`, whose tests refuse this one).
#[test]
fn a_metrics_line_is_forwarded_alone_and_cannot_add_to_a_report() {
    let edge = Recorder::start();
    let forged = r#"{"step":1,"loss":2.0}],"state":"succeeded","message":"forged","metrics":[{"step":2,"loss":1.0}"#;
    let honest = r#"{"step":3,"loss":1.5,"elapsed_s":1.0}"#;
    let payload = format!("echo '{forged}'\necho '{honest}'\nexit 1");
    let script = job_script(&valid(TINY), Some(&payload));
    let dir = std::env::temp_dir().join(format!("onramp-forge-{}", std::process::id()));
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("ONRAMP_REPORT_URL", format!("{}/report", edge.url))
        .env("ONRAMP_REPORT_TOKEN", "t0k3n")
        .env("ONRAMP_JOB_DIR", &dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("bash");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(status.code(), Some(1));
    let reports = edge.reports();
    assert_eq!(
        reports,
        [
            r#"{"state":"running","attempt":0}"#.to_string(),
            format!("{forged}\n"),
            format!("{honest}\n"),
            r#"{"state":"failed","message":"exited with code 1"}"#.to_string(),
        ]
    );
}

/// An edge (or the network before it) that drops requests: each is sent again, so every
/// report arrives once the edge answers; one that never gets through is noted in the job's log.
#[test]
fn dropped_reports_are_sent_again_and_a_lost_one_is_noted_in_the_log() {
    let run = |edge: &Recorder, name: &str| {
        let payload = "echo '{\"step\":1,\"loss\":2.0}'\necho '{\"step\":2,\"loss\":1.5}'";
        let script = job_script(&valid(TINY), Some(payload));
        let dir = std::env::temp_dir().join(format!("onramp-{name}-{}", std::process::id()));
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .env("ONRAMP_REPORT_URL", format!("{}/report", edge.url))
            .env("ONRAMP_REPORT_TOKEN", "t0k3n")
            .env("ONRAMP_JOB_DIR", &dir)
            .output()
            .expect("bash");
        let log = std::fs::read_dir(&dir)
            .expect("the job's folder")
            .flatten()
            .find(|f| f.file_name().to_string_lossy().ends_with(".log"))
            .map(|f| std::fs::read_to_string(f.path()).expect("the job's log"))
            .unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        log
    };
    // Two dropped: the running report's first try and its second.
    let edge = Recorder::dropping(2);
    let log = run(&edge, "dropped");
    assert_eq!(
        edge.reports(),
        [
            r#"{"state":"running","attempt":0}"#,
            "{\"step\":1,\"loss\":2.0}\n",
            "{\"step\":2,\"loss\":1.5}\n",
            r#"{"state":"succeeded"}"#,
        ]
    );
    assert!(!log.contains("onramp:"), "{log}");
    // Past the retries (4 tries each): the running report and the first point are lost.
    let edge = Recorder::dropping(8);
    let log = run(&edge, "lost");
    assert_eq!(
        edge.reports(),
        ["{\"step\":2,\"loss\":1.5}\n", r#"{"state":"succeeded"}"#]
    );
    assert!(
        log.contains("onramp: a metrics report to the edge failed: curl: (22)"),
        "{log}"
    );
}

/// A job that continues another starts with that job's latest checkpoint in its own out/
/// (by step, not by name; a save a kill cut off, without the trainer_state.json the Trainer
/// writes last, and a link are not checkpoints), once: started again it keeps its own; without
/// one it fails.
#[test]
fn a_continued_job_starts_from_the_latest_checkpoint_of_the_one_it_continues() {
    let root = std::env::temp_dir().join(format!("onramp-resume-{}", std::process::id()));
    let (earlier, job) = (root.join("earlier"), root.join("job"));
    for step in ["3", "12", "x", "9", "15"] {
        let dir = earlier.join(format!("out/checkpoint-{step}"));
        std::fs::create_dir_all(&dir).expect("checkpoint");
        if step != "15" {
            std::fs::write(dir.join("trainer_state.json"), "{}").expect("state");
        }
    }
    std::os::unix::fs::symlink(
        earlier.join("out/checkpoint-3"),
        earlier.join("out/checkpoint-40"),
    )
    .expect("link");
    std::fs::write(earlier.join("out/checkpoint-12/w"), "12").expect("weights");
    let run = |from: &std::path::Path| {
        let script = job_script(&valid(TINY), Some("echo \"$(ls out | tr '\\n' ' ')\""));
        std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .env("ONRAMP_JOB_DIR", &job)
            .env("ONRAMP_RESUME_DIR", from)
            .output()
            .expect("bash")
    };
    let first = run(&earlier);
    assert!(first.status.success(), "{first:?}");
    assert_eq!(String::from_utf8_lossy(&first.stdout), "checkpoint-12 \n");
    assert_eq!(
        std::fs::read_to_string(job.join("out/checkpoint-12/w")).expect("copied"),
        "12"
    );
    std::fs::create_dir_all(job.join("out/checkpoint-20")).expect("its own");
    std::fs::create_dir_all(earlier.join("out/checkpoint-30")).expect("newer");
    std::fs::write(earlier.join("out/checkpoint-30/trainer_state.json"), "{}").expect("state");
    let again = run(&earlier);
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "checkpoint-12 checkpoint-20 \n"
    );
    std::fs::remove_dir_all(&job).expect("clean");
    let none = run(&root.join("gone"));
    assert_eq!(none.status.code(), Some(1), "{none:?}");
    assert!(none.stdout.is_empty(), "the command never ran: {none:?}");
    // An earlier job whose out/ is a link it left: nothing is continued through it.
    std::fs::remove_dir_all(&job).expect("clean");
    let linked = root.join("linked");
    std::fs::create_dir_all(&linked).expect("linked");
    std::os::unix::fs::symlink(earlier.join("out"), linked.join("out")).expect("link");
    let through = run(&linked);
    assert_eq!(through.status.code(), Some(1), "{through:?}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A spec that names an uploaded dataset: the script has the trainer's fetcher bring it into
/// the job's folder with the job's token before the training starts (the training itself gets
/// no token); a fetch that fails ends the job with the trainer's data exit code, and the
/// training never runs.
#[test]
fn an_uploaded_dataset_is_fetched_with_the_token_before_the_training() {
    let id = format!("ds_{}", "ab12".repeat(8));
    let spec = super::GPU.replace("dataset = \"alpaca-zh\"", &format!("dataset = \"{id}\""));
    assert_ne!(spec, super::GPU);
    let dir = std::env::temp_dir().join(format!("onramp-fetch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // A stand-in for the trainer's Python: records what it was run with, then exits with $CODE.
    let python = dir.join("python");
    std::fs::write(
        &python,
        "#!/bin/bash\necho \"$* $ONRAMP_REPORT_TOKEN\" >> \"$ONRAMP_JOB_DIR/../calls\"\nexit \"$CODE\"\n",
    )
    .expect("stand-in");
    std::process::Command::new("chmod")
        .args(["+x", python.to_str().expect("path")])
        .status()
        .expect("chmod");
    let edge = Recorder::start();
    let run = |code: &str| {
        let script = job_script(
            &valid(&spec),
            Some("echo \"training with '${ONRAMP_REPORT_TOKEN:-}'\""),
        );
        std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .env("ONRAMP_REPORT_URL", format!("{}/report", edge.url))
            .env("ONRAMP_REPORT_TOKEN", "t0k3n")
            .env("ONRAMP_JOB_DIR", dir.join("job"))
            .env("ONRAMP_PYTHON", &python)
            .env("CODE", code)
            .output()
            .expect("bash")
    };
    let ok = run("0");
    assert!(ok.status.success(), "{ok:?}");
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "training with ''\n");
    let failed = run("4");
    assert_eq!(failed.status.code(), Some(4), "{failed:?}");
    assert!(
        failed.stdout.is_empty(),
        "the training never ran: {failed:?}"
    );
    let calls = std::fs::read_to_string(dir.join("calls")).expect("calls");
    assert_eq!(
        calls,
        format!("-m onramp_train.fetch {id} t0k3n\n").repeat(2)
    );
    assert_eq!(
        edge.reports().last().map(String::as_str),
        Some(r#"{"state":"failed","message":"exited with code 4"}"#)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Slurm's SIGTERM to a training that saves a checkpoint on it and marks its step (as
/// onramp-train does), to the whole job (a CPU job's warning, a requeue, a cancel) or to the
/// training alone (a GPU job's warning, sent to its srun step): near the time limit (within the
/// warning and Slurm's slack) the script says where the run stopped and that it timed out; far
/// from it, nothing when Slurm stopped the whole job (its state is the truth), else the code.
#[test]
fn a_training_stopped_near_its_time_limit_says_where() {
    let stopped_at_limit = r#"{"state":"timed_out","message":"stopped at its time limit, at step 37: its checkpoint out/checkpoint-37 is kept, and a job that names this one in checkpoint.resume_from continues it"}"#;
    let running = r#"{"state":"running","attempt":0}"#;
    for whole_job in [true, false] {
        let (code, reports) = stopped(100, whole_job);
        assert_eq!(code, Some(143));
        assert_eq!(
            reports,
            [running, stopped_at_limit],
            "whole job: {whole_job}"
        );
    }
    assert_eq!(stopped(3600, true), (Some(143), vec![running.to_string()]));
    let failed = r#"{"state":"failed","message":"exited with code 143"}"#;
    assert_eq!(
        stopped(3600, false),
        (Some(143), vec![running.to_string(), failed.to_string()])
    );
}

/// A job whose limit ends in `ends_in_s`, its training stopped with SIGTERM once it runs (to
/// every process of the job, or to the training alone); its exit code and reports.
fn stopped(ends_in_s: u64, whole_job: bool) -> (Option<i32>, Vec<String>) {
    use std::os::unix::process::CommandExt;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let payload = "trap 'mkdir -p \"$ONRAMP_JOB_DIR/out\"; echo 37 > \"$ONRAMP_JOB_DIR/out/onramp-stopped\"; exit 143' TERM\n\
                   echo $BASHPID > \"$ONRAMP_JOB_DIR/training.pid\"; echo training; while :; do sleep 0.05; done";
    let edge = Recorder::start();
    let dir = std::env::temp_dir().join(format!(
        "onramp-limit-{}-{ends_in_s}-{whole_job}",
        std::process::id()
    ));
    let mut job = std::process::Command::new("bash")
        .arg("-c")
        .arg(job_script(&valid(super::GPU), Some(payload)))
        .env("ONRAMP_REPORT_URL", format!("{}/report", edge.url))
        .env("ONRAMP_REPORT_TOKEN", "t0k3n")
        .env("ONRAMP_JOB_DIR", &dir)
        .env("ONRAMP_STOP_WARNING_S", "120")
        .env("SLURM_JOB_END_TIME", (now + ends_in_s).to_string())
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("bash");
    // The training's trap is set once it has said so in the job's log.
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(dir.join("onramp-0.0.log")).is_ok_and(|l| l.contains("training"))
    {
        assert!(
            started.elapsed().as_secs() < 30,
            "the training never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let target = if whole_job {
        format!("-{}", job.id())
    } else {
        std::fs::read_to_string(dir.join("training.pid"))
            .expect("pid")
            .trim()
            .to_string()
    };
    std::process::Command::new("kill")
        .args(["-TERM", "--", &target])
        .status()
        .expect("kill");
    let status = job.wait().expect("status");
    let _ = std::fs::remove_dir_all(&dir);
    (status.code(), edge.reports())
}

/// Two jobs whose ids meet modulo 20000 on one first node: the second does not take the port the
/// first one's rendezvous listens on, nor the next one that is taken, but the first free one.
#[test]
fn a_job_takes_the_next_rendezvous_port_when_its_own_is_taken() {
    use std::net::TcpListener;
    // Three ports in a row: the first two taken (listening), the third free.
    let (base, held) = (20000..39990u16)
        .step_by(97)
        .find_map(|p| {
            let a = TcpListener::bind(("0.0.0.0", p)).ok()?;
            let b = TcpListener::bind(("0.0.0.0", p + 1)).ok()?;
            TcpListener::bind(("0.0.0.0", p + 2)).ok()?;
            Some((p, [a, b]))
        })
        .expect("three free ports");
    // The script's lines that choose the port, as the job runs them.
    let script = job_script(&valid(TINY), None);
    let from = script
        .find("export MASTER_PORT=")
        .expect("the port's lines");
    let to = from + script[from..].find("\ndone\n").expect("their end") + 6;
    let lines = format!(
        "set -euo pipefail\n{}echo \"$MASTER_PORT\"\n",
        &script[from..to]
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&lines)
        .env(
            "SLURM_JOB_ID",
            (u32::from(base) - 20000 + 40000).to_string(),
        )
        .output()
        .expect("bash");
    drop(held);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (base + 2).to_string(),
        "{out:?}"
    );
}
