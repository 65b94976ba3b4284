//! The job script sent to Slurm: jobspec's sbatch script (its `#SBATCH` lines and its launch
//! command) wrapped so that the job reports to the edge by itself — `running` when it starts,
//! every metrics line its training prints (`{"step": …, "loss": …}` JSON lines, as
//! `onramp-runner tiny-train` and model-tiny print them), and `succeeded` or `failed` with the
//! exit code at the end. A training that ended well first pushes what it trained (`out/final`,
//! `out/merged`, `out/metrics.json`) to the edge as the job's artifacts, with onramp-train's
//! pusher (`python -m onramp_train.artifacts`), the one program the wrapper hands the token.
//!
//! Slurm serves no job output over HTTP, so the wrapper also sends its log to the edge
//! (`POST <ONRAMP_LOG_URL>?offset=N&attempt=K`, raw bytes, in chunks of at most 64 KiB every 2 s), which
//! stores it for `GET /api/jobs/{id}/logs`; all it needs is what the reports already need, a
//! route from the compute nodes to the edge. When Slurm stops a job (cancel, time limit) it
//! sends SIGTERM and, after its grace period (`KillWait`, 30 s by default), SIGKILL: the training
//! command ends at the SIGTERM, but the wrapper's forwarding and shipping ignore it, so the log's
//! last lines still reach the edge; the wrapper then reports no state of its own (Slurm's is the
//! truth: cancelled or timed out, which the edge's sweep reads), but for a training stopped at
//! its time limit, or at the warning Slurm sends before it, with a checkpoint saved: that job
//! says where it stopped and ends `timed_out`. The whole output also stays in
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

const WRAPPER_HEAD: &str = r#"# What the job writes is its owner's only: a tenant's data, model and logs, on shared storage.
umask 077
# Onramp: the job reports to the edge itself. The URLs and token come in the environment and
# are kept from the training command.
ONRAMP_URL="${ONRAMP_REPORT_URL:-}"
ONRAMP_LOGS="${ONRAMP_LOG_URL:-}"
ONRAMP_TOKEN="${ONRAMP_REPORT_TOKEN:-}"
unset ONRAMP_REPORT_URL ONRAMP_REPORT_TOKEN ONRAMP_LOG_URL
# The job's own folder, <work_dir>/<job id>: everything the job writes stays in there.
ONRAMP_JOB_DIR="${ONRAMP_JOB_DIR:-$PWD/onramp-${SLURM_JOB_ID:-0}}"
export ONRAMP_JOB_DIR
# Which run of the job this is (Slurm's restart count): each attempt has its own log, pushed as its.
ONRAMP_ATTEMPT="${SLURM_RESTART_COUNT:-0}"
case "$ONRAMP_ATTEMPT" in '' | *[!0-9]*) ONRAMP_ATTEMPT=0 ;; esac
ONRAMP_LOG="$ONRAMP_JOB_DIR/onramp-${SLURM_JOB_ID:-0}.$ONRAMP_ATTEMPT.log"
# A request the network or the edge dropped (a timeout, a 5xx, a 429) goes again, 3 times at
# most: every report and log chunk is safe to send twice (the edge keeps the first).
onramp_curl() {
  curl -sS --fail -m 10 --retry 3 --retry-delay 1 -o /dev/null -X POST \
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
        --data-binary @"$ONRAMP_LOG.chunk" "$ONRAMP_LOGS?offset=$off&attempt=$ONRAMP_ATTEMPT" || break
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
  local line err
  while IFS= read -r line; do
    printf '%s\n' "$line"
    printf '%s\n' "$line" >> "$ONRAMP_LOG"
    # A metrics line goes as it is, as the body of its own report: the edge reads it as one
    # metric point and nothing else, so no line can add to what the report says.
    # One that fails says so in the job's log, where the user reads it.
    case "$line" in
      '{"step":'*'"loss":'*)
        [ -z "$ONRAMP_URL" ] || err=$(printf '%s\n' "$line" | onramp_curl \
          -H 'Content-Type: application/x-ndjson' --data-binary @- "$ONRAMP_URL" 2>&1) \
          || printf 'onramp: a metrics report to the edge failed: %s\n' "$err" \
            | tee -a "$ONRAMP_LOG" ;;
    esac
  done
}
# The trainer's programs that talk to the edge (`python -m MODULE ARGS…`): the only ones handed
# the token.
onramp_trainer() {
  ONRAMP_REPORT_URL="$ONRAMP_URL" ONRAMP_REPORT_TOKEN="$ONRAMP_TOKEN" ONRAMP_JOB_LOG="$ONRAMP_LOG" \
    "${ONRAMP_PYTHON:-python3}" -m "$@"
}
# What the training left in out/ (onramp-train's final/, merged/ and metrics.json) and this run's
# log go to the edge as the job's artifacts, pushed by the trainer's own pusher.
onramp_push() {
  [ -n "$ONRAMP_URL" ] && [ -d "$ONRAMP_JOB_DIR/out/final" ] || return 0
  onramp_trainer onramp_train.artifacts "$ONRAMP_JOB_DIR/out" \
    || echo "onramp: the trained model could not be pushed to the edge; it stays in $ONRAMP_JOB_DIR/out"
}
# An uploaded dataset the spec names (`ds_…`) comes from the edge into the job's folder, checked by
# its sha256, by the trainer's own fetcher: the training finds it there and needs no token.
onramp_fetch() {
  [ -n "$ONRAMP_URL" ] || return 0
  onramp_trainer onramp_train.fetch "$1"
}
# The training stopped on a signal near its time limit, within the warning Slurm sends before it
# (ONRAMP_STOP_WARNING_S; to the training's step, or to this script too) and Slurm's minute and a
# half of slack, a checkpoint saved (onramp-train's out/onramp-stopped names the step): the time
# limit ended the job, not a requeue or a cancel.
onramp_at_limit() {
  ONRAMP_STEP=$(head -c 16 "$ONRAMP_JOB_DIR/out/onramp-stopped" 2> /dev/null) || return 1
  case "$ONRAMP_STEP" in '' | *[!0-9]*) return 1 ;; esac
  case "${SLURM_JOB_END_TIME:-}${ONRAMP_STOP_WARNING_S:-0}" in *[!0-9]*) return 1 ;; esac
  [ -n "${SLURM_JOB_END_TIME:-}" ] \
    && [ "$(date +%s)" -ge "$((SLURM_JOB_END_TIME - ${ONRAMP_STOP_WARNING_S:-0} - 90))" ]
}
# Folders of jobs that ended more than the backend's retention ago go, with Slurm's log files
# of the same age. A folder whose job runs has no end mark; one whose job Slurm still knows (an
# attempt stopped by a requeue or a preemption marks it too, and waits to run again from its
# checkpoints) stays, and where Slurm cannot say which jobs it knows, nothing goes this time. A
# job's folder with no mark (its job was killed before it could write one), which Slurm does not
# know either, goes once nothing in it has changed for the retention and a week more.
onramp_sweep() {
  [ -n "${ONRAMP_WORK_DIR:-}" ] && [ -n "${ONRAMP_RETENTION_S:-}" ] || return 0
  local now cutoff known='' onramp_old onramp_new
  now=$(date +%s)
  cutoff="@$(( now - ONRAMP_RETENTION_S ))"
  if command -v squeue > /dev/null; then
    known=$(squeue -h -o '%j' 2> /dev/null) || return 0
    for onramp_old in "$ONRAMP_WORK_DIR"/*; do
      case "${onramp_old##*/}" in '' | *[!0-9a-f]*) continue ;; esac
      [ -d "$onramp_old" ] && [ ! -L "$onramp_old" ] && [ ! -e "$onramp_old/.onramp-ended" ] || continue
      case $'\n'"$known"$'\n' in *"-${onramp_old##*/}"$'\n'*) continue ;; esac
      # A folder find cannot read whole is not known to be unchanged.
      onramp_new=$(find "$onramp_old" -newermt "@$(( now - ONRAMP_RETENTION_S - 604800 ))" \
        -print -quit 2> /dev/null) || continue
      [ -z "$onramp_new" ] && rm -rf -- "$onramp_old"
    done
  fi
  while IFS= read -r -d '' onramp_old; do
    case $'\n'"$known"$'\n' in *"-${onramp_old##*/}"$'\n'*) continue ;; esac
    rm -rf -- "$onramp_old"
  done < <(find "$ONRAMP_WORK_DIR" -mindepth 2 -maxdepth 2 -name .onramp-ended \
    ! -newermt "$cutoff" -printf '%h\0' 2> /dev/null)
  find "$ONRAMP_WORK_DIR" -maxdepth 1 -name 'slurm-*.out' ! -newermt "$cutoff" -delete 2>/dev/null
  return 0
}
if ! mkdir -p "$ONRAMP_JOB_DIR" || ! cd "$ONRAMP_JOB_DIR" || ! : > "$ONRAMP_LOG"; then
  onramp_post '{"state":"failed","message":"the job cannot create its folder"}'
  exit 1
fi
rm -f .onramp-ended out/onramp-stopped
onramp_sweep
# A job that continues an earlier one starts from that job's latest checkpoint, linked (or
# copied) into its own out/ once, else fetched from the edge: started again, it finds its own
# checkpoints.
if [ -n "${ONRAMP_RESUME_DIR:-}" ] && ! compgen -G 'out/checkpoint-*' > /dev/null; then
  onramp_from=''
  # The earlier job's folder and out/ are folders, never links it left there.
  onramp_out="$ONRAMP_RESUME_DIR/out"
  if [ -L "$ONRAMP_RESUME_DIR" ] || [ -L "$onramp_out" ]; then onramp_out=/nonexistent; fi
  for onramp_d in "$onramp_out"/checkpoint-*; do
    onramp_n="${onramp_d##*-}"
    # A save a kill cut off has no trainer_state.json (the Trainer writes it last); a link
    # there is the job's own doing, not a save.
    [ -d "$onramp_d" ] && [ ! -L "$onramp_d" ] && [ -f "$onramp_d/trainer_state.json" ] || continue
    case "$onramp_n" in '' | *[!0-9]*) continue ;; esac
    if [ -z "$onramp_from" ] || [ "$onramp_n" -gt "${onramp_from##*-}" ]; then onramp_from="$onramp_d"; fi
  done
  # None here (it ran on another backend, or its folder passed the retention): the checkpoint
  # it uploaded, fetched from the edge with this job's token.
  if [ -z "$onramp_from" ]; then
    { [ -n "$ONRAMP_URL" ] && onramp_trainer onramp_train.resume out "${ONRAMP_RESUME_DIR##*/}"; } 2>&1 \
      | tee -a "$ONRAMP_LOG"
    [ "${PIPESTATUS[0]}" -eq 0 ] || onramp_from='-'
  elif ! mkdir -p out \
    || ! { cp -al "$onramp_from" out/ 2> /dev/null || cp -a "$onramp_from" out/; }; then
    onramp_from='-'
  fi
  if [ "$onramp_from" = '-' ]; then
    onramp_post '{"state":"failed","message":"the job this one continues left no checkpoint here (none saved, or its folder passed the retention) and none it uploaded could be fetched from the edge (checkpoint.upload = true uploads one)"}'
    touch .onramp-ended
    exit 1
  fi
fi
onramp_post "{\"state\":\"running\",\"attempt\":$ONRAMP_ATTEMPT}"
ONRAMP_SHIP=''
if [ -n "$ONRAMP_LOGS" ]; then onramp_ship & ONRAMP_SHIP=$!; fi
# Stopped by Slurm: the command below gets the SIGTERM; this shell notes it and finishes up.
ONRAMP_STOPPED=''
trap 'ONRAMP_STOPPED=1' TERM
(
"#;

const WRAPPER_TAIL: &str = r#") 2>&1 | onramp_forward
status=${PIPESTATUS[0]}
# A training that ended well pushes its model while the job still runs (its token is good until
# the job has ended); what the push prints is in the job's log.
if [ -z "$ONRAMP_STOPPED" ] && [ "$status" -eq 0 ]; then onramp_push 2>&1 | onramp_forward; fi
touch "$ONRAMP_LOG.done"
# `wait` returns early when a signal comes in: wait until the shipper has really finished.
while [ -n "$ONRAMP_SHIP" ] && kill -0 "$ONRAMP_SHIP" 2>/dev/null; do wait "$ONRAMP_SHIP"; done
rm -f "$ONRAMP_LOG.chunk" "$ONRAMP_LOG.done"
# From now on the retention counts: the folder stays until it has passed.
touch "$ONRAMP_JOB_DIR/.onramp-ended"
if onramp_at_limit; then
  onramp_post "{\"state\":\"timed_out\",\"message\":\"stopped at its time limit, at step $ONRAMP_STEP: its checkpoint out/checkpoint-$ONRAMP_STEP is kept, and a job that names this one in checkpoint.resume_from continues it\"}"
  exit "$status"
elif [ -n "$ONRAMP_STOPPED" ]; then
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
    // Fetched inside the training's subshell (the training set, then the eval set): what it
    // prints is in the job's log, and a dataset that cannot be fetched fails the job with the
    // trainer's data exit code and its reason.
    let fetch: String = api::datasets::named_in_spec(v.spec())
        .into_iter()
        .map(|(_, id)| format!("onramp_fetch {} || exit 4\n", launch::shell_quote(id)))
        .collect();
    format!("{head}{WRAPPER_HEAD}{fetch}{body}{WRAPPER_TAIL}")
}

#[cfg(test)]
pub(crate) mod tests;
