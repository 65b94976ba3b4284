//! The job script sent to Slurm: jobspec's sbatch script (its `#SBATCH` lines and its launch
//! command) wrapped so that the job reports to the edge by itself — `running` when it starts,
//! every metrics line its training prints (`{"step": …, "loss": …}` JSON lines, as
//! `onramp-runner tiny-train` and model-tiny print them), and `succeeded` or `failed` with the
//! exit code at the end.
//!
//! Slurm serves no job output over HTTP, so the wrapper also sends its log to the edge
//! (`POST <ONRAMP_LOG_URL>?offset=N`, raw bytes, in chunks of at most 64 KiB every 2 s), which
//! stores it for `GET /api/jobs/{id}/logs`; all it needs is what the reports already need, a
//! route from the compute nodes to the edge. The last 2 s of a job that Slurm kills (cancel,
//! time limit) may be missing there; the whole output stays in the job's Slurm log file.
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
(
"#;

const WRAPPER_TAIL: &str = r#") 2>&1 | onramp_forward
status=${PIPESTATUS[0]}
touch "$ONRAMP_LOG.done"
[ -n "$ONRAMP_SHIP" ] && wait "$ONRAMP_SHIP"
rm -f "$ONRAMP_LOG" "$ONRAMP_LOG.chunk" "$ONRAMP_LOG.done"
if [ "$status" -eq 0 ]; then
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
        include_str!("../../../jobspec/specs/tiny-train-stories260k.toml");
    pub(crate) const GPU: &str = include_str!("../../../jobspec/specs/7b-lora-4090.toml");

    #[test]
    fn wraps_the_tiny_train_command() {
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
            [ -n "$ONRAMP_SHIP" ] && wait "$ONRAMP_SHIP"
            rm -f "$ONRAMP_LOG" "$ONRAMP_LOG.chunk" "$ONRAMP_LOG.done"
            if [ "$status" -eq 0 ]; then
              onramp_post '{"state":"succeeded"}'
            else
              onramp_post "{\"state\":\"failed\",\"message\":\"exited with code $status\"}"
            fi
            exit "$status"
        "##]]
        .assert_eq(&job_script(&valid(TINY), None));
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
}
