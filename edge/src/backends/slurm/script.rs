//! The job script sent to Slurm: jobspec's sbatch script (its `#SBATCH` lines and its launch
//! command) wrapped so that the job reports to the edge by itself — `running` when it starts,
//! every metrics line its training prints (`{"step": …, "loss": …}` JSON lines, as
//! `onramp-runner tiny-train` and model-tiny print them), and `succeeded` or `failed` with the
//! exit code at the end.
//!
//! Slurm serves no job output over HTTP, so the wrapper also sends its log to the edge
//! (`POST <ONRAMP_LOG_URL>?offset=N`, raw bytes, in chunks of at most 64 KiB every 2 s), which
//! stores it for `GET /api/jobs/{id}/logs`; all it needs is what the reports already need, a
//! route from the compute nodes to the edge. When Slurm stops a job (cancel, time limit) it
//! sends SIGTERM and, after its grace period (`KillWait`, 30 s by default), SIGKILL: the training
//! command ends at the SIGTERM, but the wrapper's forwarding and shipping ignore it, so the log's
//! last lines still reach the edge; the wrapper then reports no state of its own (Slurm's is the
//! truth: cancelled or timed out, which the edge's sweep reads). The whole output also stays in
//! the job's Slurm log file.
//!
//! The URLs and token arrive in the job's environment (`ONRAMP_REPORT_URL`, `ONRAMP_LOG_URL`,
//! `ONRAMP_REPORT_TOKEN`), never in the script text, which Slurm shows to anyone allowed to see
//! the job; the wrapper takes them out of the environment before the training command starts,
//! and hands the token to curl through a file descriptor so that it never shows in `ps`.

use jobspec::ValidSpec;
use jobspec::launch;

/// How the job reaches the edge; both values go into the job's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportHook {
    pub url: String,
    /// Where the job's log goes (`POST …?offset=N`).
    pub log_url: String,
    pub token: String,
}

const WRAPPER_HEAD: &str = r#"# Onramp: the job reports to the edge itself. The URLs and token come in the environment and
# are kept from the training command.
ONRAMP_URL="${ONRAMP_REPORT_URL:-}"
ONRAMP_LOGS="${ONRAMP_LOG_URL:-}"
ONRAMP_TOKEN="${ONRAMP_REPORT_TOKEN:-}"
unset ONRAMP_REPORT_URL ONRAMP_REPORT_TOKEN ONRAMP_LOG_URL
ONRAMP_LOG="$(mktemp)"
onramp_curl() {
  curl -sS --fail -m 10 -o /dev/null -X POST \
    -H @<(printf 'Authorization: Bearer %s\n' "$ONRAMP_TOKEN") "$@"
}
onramp_post() {
  [ -n "$ONRAMP_URL" ] || return 0
  onramp_curl -H 'Content-Type: application/json' --data-binary "$1" "$ONRAMP_URL" \
    || echo "onramp: a report to the edge failed" >&2
}
# slurmrestd serves no output: this loop sends the log to the edge in chunks every 2 s (a chunk
# that fails goes again next round) and the rest when the command has ended (five tries at most).
onramp_ship() {
  trap '' TERM
  local off=0 size n last='' rounds=0
  while :; do
    [ -e "$ONRAMP_LOG.done" ] && last=1
    size=$(stat -c %s "$ONRAMP_LOG")
    while [ "$off" -lt "$size" ]; do
      tail -c +"$((off + 1))" "$ONRAMP_LOG" | head -c 65536 > "$ONRAMP_LOG.chunk"
      n=$(stat -c %s "$ONRAMP_LOG.chunk")
      onramp_curl -H 'Content-Type: application/octet-stream' \
        --data-binary @"$ONRAMP_LOG.chunk" "$ONRAMP_LOGS?offset=$off" || break
      off=$((off + n))
    done
    if [ -n "$last" ]; then
      rounds=$((rounds + 1))
      [ "$off" -ge "$size" ] || [ "$rounds" -ge 5 ] && return 0
    fi
    sleep 2
  done
}
onramp_forward() {
  trap '' TERM
  local line
  while IFS= read -r line; do
    printf '%s\n' "$line"
    printf '%s\n' "$line" >> "$ONRAMP_LOG"
    case "$line" in
      '{"step":'*'"loss":'*) onramp_post "{\"metrics\":[$line]}" ;;
    esac
  done
}
onramp_post '{"state":"running"}'
ONRAMP_SHIP=''
if [ -n "$ONRAMP_LOGS" ]; then onramp_ship & ONRAMP_SHIP=$!; fi
# Stopped by Slurm: the command below gets the SIGTERM; this shell notes it and finishes up.
ONRAMP_STOPPED=''
trap 'ONRAMP_STOPPED=1' TERM
(
"#;

const WRAPPER_TAIL: &str = r#") 2>&1 | onramp_forward
status=${PIPESTATUS[0]}
touch "$ONRAMP_LOG.done"
# `wait` returns early when a signal comes in: wait until the shipper has really finished.
while [ -n "$ONRAMP_SHIP" ] && kill -0 "$ONRAMP_SHIP" 2>/dev/null; do wait "$ONRAMP_SHIP"; done
rm -f "$ONRAMP_LOG" "$ONRAMP_LOG.chunk" "$ONRAMP_LOG.done"
if [ -n "$ONRAMP_STOPPED" ]; then
  exit "$status"
elif [ "$status" -eq 0 ]; then
  onramp_post '{"state":"succeeded"}'
else
  onramp_post "{\"state\":\"failed\",\"message\":\"exited with code $status\"}"
fi
exit "$status"
"#;

/// The whole job script. `payload` replaces the spec's launch command (a custom command, or a
/// test's); `None` runs what `jobspec::launch` generates for the spec.
pub fn job_script(v: &ValidSpec, payload: Option<&str>) -> String {
    let generated = launch::sbatch_script(v);
    let mut head = String::new();
    let mut body = String::new();
    let mut in_head = true;
    for line in generated.lines() {
        in_head &= line.starts_with('#');
        if in_head {
            // The log paths are the submit request's; a stray `--output` here would disagree.
            if !line.starts_with("#SBATCH --output") && !line.starts_with("#SBATCH --error") {
                head.push_str(line);
                head.push('\n');
            }
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    let body = match payload {
        Some(p) => {
            let mut p = p.trim_end().to_string();
            p.push('\n');
            p
        }
        None => body.trim_start_matches('\n').to_string(),
    };
    format!("{head}{WRAPPER_HEAD}{body}{WRAPPER_TAIL}")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use expect_test::expect;

    pub(crate) fn valid(toml: &str) -> ValidSpec {
        let (v, diags) = jobspec::validate_toml(toml);
        v.unwrap_or_else(|| panic!("{diags:?}"))
    }

    pub(crate) const TINY: &str =
        include_str!("../../../../jobspec/specs/tiny-train-stories260k.toml");
    pub(crate) const GPU: &str = include_str!("../../../../jobspec/specs/7b-lora-4090.toml");

    /// The tiny-train script in three parts, which together are the whole script: the batch
    /// header with what the job is given, the hooks that report and ship its log, and the
    /// command with how the job ends.
    fn tiny_train_script() -> [String; 3] {
        let script = job_script(&valid(TINY), None);
        let hooks = script.find("onramp_curl() {").unwrap();
        let run = script
            .find("onramp_post '{\"state\":\"running\"}'")
            .unwrap();
        [&script[..hooks], &script[hooks..run], &script[run..]].map(String::from)
    }

    #[test]
    fn wraps_the_tiny_train_command() {
        let [header, _, command] = tiny_train_script();
        expect![[r##"
            #!/bin/bash
            #SBATCH --job-name=tiny-stories260k
            #SBATCH --nodes=1
            #SBATCH --ntasks-per-node=1
            #SBATCH --cpus-per-task=4
            #SBATCH --time=00:30:00
            # Generated by Onramp for TinyStories 260K (llama2.c) on 1 × CPU (local runner) (200 step(s), 409600 tokens).
            # Onramp: the job reports to the edge itself. The URLs and token come in the environment and
            # are kept from the training command.
            ONRAMP_URL="${ONRAMP_REPORT_URL:-}"
            ONRAMP_LOGS="${ONRAMP_LOG_URL:-}"
            ONRAMP_TOKEN="${ONRAMP_REPORT_TOKEN:-}"
            unset ONRAMP_REPORT_URL ONRAMP_REPORT_TOKEN ONRAMP_LOG_URL
            ONRAMP_LOG="$(mktemp)"
        "##]].assert_eq(&header);
        expect![[r#"
            onramp_post '{"state":"running"}'
            ONRAMP_SHIP=''
            if [ -n "$ONRAMP_LOGS" ]; then onramp_ship & ONRAMP_SHIP=$!; fi
            # Stopped by Slurm: the command below gets the SIGTERM; this shell notes it and finishes up.
            ONRAMP_STOPPED=''
            trap 'ONRAMP_STOPPED=1' TERM
            (
            set -euo pipefail

            export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
            export MASTER_PORT=29500
            export OMP_NUM_THREADS=8
            export TOKENIZERS_PARALLELISM=false

            onramp-runner tiny-train \
                --model stories260K \
                --dataset tinyshakespeare \
                --steps 200 \
                --micro-batch 8 \
                --seq-len 256 \
                --lr 0.001 \
                --warmup 10
            ) 2>&1 | onramp_forward
            status=${PIPESTATUS[0]}
            touch "$ONRAMP_LOG.done"
            # `wait` returns early when a signal comes in: wait until the shipper has really finished.
            while [ -n "$ONRAMP_SHIP" ] && kill -0 "$ONRAMP_SHIP" 2>/dev/null; do wait "$ONRAMP_SHIP"; done
            rm -f "$ONRAMP_LOG" "$ONRAMP_LOG.chunk" "$ONRAMP_LOG.done"
            if [ -n "$ONRAMP_STOPPED" ]; then
              exit "$status"
            elif [ "$status" -eq 0 ]; then
              onramp_post '{"state":"succeeded"}'
            else
              onramp_post "{\"state\":\"failed\",\"message\":\"exited with code $status\"}"
            fi
            exit "$status"
        "#]].assert_eq(&command);
    }

    #[test]
    fn the_tiny_train_script_reports_and_ships_its_log() {
        let [_, hooks, _] = tiny_train_script();
        expect![[r#"
            onramp_curl() {
              curl -sS --fail -m 10 -o /dev/null -X POST \
                -H @<(printf 'Authorization: Bearer %s\n' "$ONRAMP_TOKEN") "$@"
            }
            onramp_post() {
              [ -n "$ONRAMP_URL" ] || return 0
              onramp_curl -H 'Content-Type: application/json' --data-binary "$1" "$ONRAMP_URL" \
                || echo "onramp: a report to the edge failed" >&2
            }
            # slurmrestd serves no output: this loop sends the log to the edge in chunks every 2 s (a chunk
            # that fails goes again next round) and the rest when the command has ended (five tries at most).
            onramp_ship() {
              trap '' TERM
              local off=0 size n last='' rounds=0
              while :; do
                [ -e "$ONRAMP_LOG.done" ] && last=1
                size=$(stat -c %s "$ONRAMP_LOG")
                while [ "$off" -lt "$size" ]; do
                  tail -c +"$((off + 1))" "$ONRAMP_LOG" | head -c 65536 > "$ONRAMP_LOG.chunk"
                  n=$(stat -c %s "$ONRAMP_LOG.chunk")
                  onramp_curl -H 'Content-Type: application/octet-stream' \
                    --data-binary @"$ONRAMP_LOG.chunk" "$ONRAMP_LOGS?offset=$off" || break
                  off=$((off + n))
                done
                if [ -n "$last" ]; then
                  rounds=$((rounds + 1))
                  [ "$off" -ge "$size" ] || [ "$rounds" -ge 5 ] && return 0
                fi
                sleep 2
              done
            }
            onramp_forward() {
              trap '' TERM
              local line
              while IFS= read -r line; do
                printf '%s\n' "$line"
                printf '%s\n' "$line" >> "$ONRAMP_LOG"
                case "$line" in
                  '{"step":'*'"loss":'*) onramp_post "{\"metrics\":[$line]}" ;;
                esac
              done
            }
        "#]].assert_eq(&hooks);
    }

    /// Every POST the stand-in edge got: its path and body.
    #[cfg(unix)]
    type Posts = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

    /// A stand-in for the edge that records every POST it gets.
    #[cfg(unix)]
    struct Recorder {
        url: String,
        posts: Posts,
    }

    #[cfg(unix)]
    impl Recorder {
        fn start() -> Recorder {
            use std::io::{BufRead, BufReader, Read, Write};
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let url = format!("http://{}", listener.local_addr().expect("address"));
            let posts = Posts::default();
            let seen = posts.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
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
                    if r.read_exact(&mut body).is_ok() {
                        seen.lock().expect("lock").push((path, body));
                    }
                    let _ = r.get_mut().write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
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
    #[cfg(unix)]
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
        assert_eq!(edge.reports(), [r#"{"state":"running"}"#]);
    }

    #[test]
    fn a_gpu_job_keeps_its_gres_line_and_a_payload_replaces_the_command() {
        let s = job_script(&valid(GPU), Some("echo hello"));
        assert!(s.contains("#SBATCH --gres=gpu:1\n"), "{s}");
        assert!(
            s.contains("(\necho hello\n) 2>&1 | onramp_forward\n"),
            "{s}"
        );
        assert!(!s.contains("torchrun"), "{s}");
        assert!(!s.contains("#SBATCH --output"), "{s}");
        let full = job_script(&valid(GPU), None);
        assert!(full.contains("srun torchrun"), "{full}");
        assert!(full.contains("ONRAMP_DS_CONFIG"), "{full}");
    }

    /// The spec's text fields with `value` in one of them (the others keep the template's).
    fn with_text(template: &str, key: &str, value: &str) -> Option<ValidSpec> {
        let quoted = serde_json::to_string(value).ok()?;
        let toml: String = template
            .lines()
            .map(|l| {
                if l.starts_with(&format!("{key} = ")) {
                    format!("{key} = {quoted}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        jobspec::validate_toml(&toml).0
    }

    /// The `#SBATCH` directives Slurm reads: the comment block before the first command.
    fn directives(script: &str) -> Vec<String> {
        script
            .lines()
            .take_while(|l| l.starts_with('#'))
            .filter(|l| l.starts_with("#SBATCH"))
            .map(|l| l.split('=').next().unwrap_or(l).to_string())
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

        /// Whatever a user writes in `name` or `data.dataset`, the job script has the template's
        /// lines, the same `#SBATCH` directives and the same wrapper around one launch command.
        #[test]
        fn no_text_field_adds_a_line_or_a_directive(
            value in proptest::prop_oneof![
                proptest::prelude::any::<String>(),
                "[ -~]{1,40}",
                "(\n|\r|#SBATCH --uid=0|\\$\\(id\\)|'|\"|;|\u{2028}|x|/d/s.jsonl){1,6}",
            ],
            key in proptest::sample::select(vec!["name", "dataset"]),
        ) {
            for template in [TINY, GPU] {
                let base = job_script(&valid(template), None);
                if let Some(v) = with_text(template, key, &value) {
                    let script = job_script(&v, None);
                    proptest::prop_assert_eq!(script.lines().count(), base.lines().count());
                    proptest::prop_assert_eq!(directives(&script), directives(&base));
                    proptest::prop_assert!(script.ends_with(WRAPPER_TAIL));
                } else {
                    proptest::prop_assert!(
                        !jobspec::validate::is_clean_text(&value, key == "name")
                            || value.trim().is_empty()
                            || value.len() > 128
                    );
                }
            }
        }
    }
}
