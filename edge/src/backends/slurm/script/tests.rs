//! The job script's tests: its text in parts, and the script run under bash as Slurm would.

use super::*;
use expect_test::expect;

#[cfg(unix)]
mod bash;

pub(crate) fn valid(toml: &str) -> ValidSpec {
    let (v, diags) = jobspec::validate_toml(toml);
    v.unwrap_or_else(|| panic!("{diags:?}"))
}

pub(crate) const TINY: &str =
    include_str!("../../../../../jobspec/specs/tiny-train-stories260k.toml");
pub(crate) const GPU: &str = include_str!("../../../../../jobspec/specs/7b-lora-4090.toml");

/// The tiny-train script in six parts, which together are the whole script: the batch
/// header with what the job is given, the hooks that report and ship its log, how it tells a
/// stop at its time limit, the job's own folder (and the retention of the others), the
/// command, and how the job ends.
fn tiny_train_script() -> [String; 6] {
    let script = job_script(&valid(TINY), None);
    let hooks = script.find("onramp_curl() {").unwrap();
    let at_limit = script
        .find("# The training stopped on a signal near")
        .unwrap();
    let folder = script.find("# Folders of jobs that ended").unwrap();
    let run = script
        .find("onramp_post \"{\\\"state\\\":\\\"running\\\"")
        .unwrap();
    let end = script.find("if onramp_at_limit; then").unwrap();
    [
        &script[..hooks],
        &script[hooks..at_limit],
        &script[at_limit..folder],
        &script[folder..run],
        &script[run..end],
        &script[end..],
    ]
    .map(String::from)
}

#[test]
fn the_tiny_train_script_works_in_its_own_folder() {
    let [_, _, _, folder, _, _] = tiny_train_script();
    expect![[r##"
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
    "##]].assert_eq(&folder);
}

#[test]
fn wraps_the_tiny_train_command() {
    let [header, _, _, _, command, _] = tiny_train_script();
    expect![[r##"
        #!/bin/bash
        #SBATCH --job-name=tiny-stories260k
        #SBATCH --nodes=1
        #SBATCH --ntasks-per-node=1
        #SBATCH --cpus-per-task=4
        #SBATCH --time=00:30:00
        #SBATCH --requeue
        # Generated by Onramp for TinyStories 260K (llama2.c) on 1 × CPU (local runner) (200 step(s), 409600 tokens).
        # 由 Onramp 为 TinyStories 260K (llama2.c) 生成，运行于 1 × CPU (local runner)（200 步，409600 个 token）。
        # What the job writes is its owner's only: a tenant's data, model and logs, on shared storage.
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
    "##]].assert_eq(&header);
    expect![[r#"
        onramp_post "{\"state\":\"running\",\"attempt\":$ONRAMP_ATTEMPT}"
        ONRAMP_SHIP=''
        if [ -n "$ONRAMP_LOGS" ]; then onramp_ship & ONRAMP_SHIP=$!; fi
        # Stopped by Slurm: the command below gets the SIGTERM; this shell notes it and finishes up.
        ONRAMP_STOPPED=''
        trap 'ONRAMP_STOPPED=1' TERM
        (
        set -euo pipefail

        # The job's own folder: everything it writes stays in there.
        # 作业自己的文件夹：它写的一切都留在里面。
        ONRAMP_JOB_DIR="${ONRAMP_JOB_DIR:-$SLURM_SUBMIT_DIR/onramp-$SLURM_JOB_ID}"
        mkdir -p "$ONRAMP_JOB_DIR"
        cd "$ONRAMP_JOB_DIR"
        export ONRAMP_OUTPUT_DIR="$ONRAMP_JOB_DIR/out"

        export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
        export MASTER_PORT=$((20000 + ${SLURM_JOB_ID:-0} % 20000))
        for _ in $(seq 64); do
          (: <"/dev/tcp/127.0.0.1/$MASTER_PORT") 2>/dev/null || break
          MASTER_PORT=$((20000 + (MASTER_PORT - 19999) % 20000))
        done
        export OMP_NUM_THREADS="${OMP_NUM_THREADS:-8}"
        export TOKENIZERS_PARALLELISM=false

        onramp-runner tiny-train \
            --model stories260K \
            --dataset tinyshakespeare \
            --steps 200 \
            --micro-batch 8 \
            --seq-len 256 \
            --lr 0.001 \
            --warmup 10 \
            --seed 42
        ) 2>&1 | onramp_forward
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
    "#]].assert_eq(&command);
}

/// How the job ends: its state said by itself, but for a stop by Slurm, where Slurm's state is
/// the truth unless the training stopped near its time limit with a checkpoint saved (the
/// backend's warning before the limit): then where it stopped (`bash.rs` runs both).
#[test]
fn a_job_says_how_it_ended_and_where_a_stop_at_its_time_limit_left_it() {
    let [_, _, at_limit, _, _, end] = tiny_train_script();
    expect![[r##"
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
    "##]].assert_eq(&at_limit);
    expect![[r#"
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
    "#]].assert_eq(&end);
}

#[test]
fn the_tiny_train_script_reports_and_ships_its_log() {
    let [_, hooks, _, _, _, _] = tiny_train_script();
    expect![[r#"
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
    "#]].assert_eq(&hooks);
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
    assert!(
        full.contains(
            "srun --ntasks-per-node=1 ${SLURM_CPUS_PER_TASK:+--cpus-per-task=\"$SLURM_CPUS_PER_TASK\"} torchrun"
        ),
        "{full}"
    );
    assert!(
        full.contains("cat > onramp-run.json <<'ONRAMP_RUN'"),
        "{full}"
    );
}

#[test]
fn a_job_fetches_each_uploaded_dataset_its_spec_names_before_training() {
    let (train, eval) = (
        format!("ds_{}", "a".repeat(32)),
        format!("ds_{}", "b".repeat(32)),
    );
    let spec = GPU.replace("\"alpaca-zh\"", &format!("\"{train}\""));
    let fetches = |toml: &str| -> Vec<String> {
        job_script(&valid(toml), None)
            .lines()
            .filter(|l| l.starts_with("onramp_fetch "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(fetches(GPU), Vec::<String>::new());
    assert_eq!(fetches(&spec), [format!("onramp_fetch {train} || exit 4")]);
    let with_eval = format!("{spec}\n[eval]\ndataset = \"{eval}\"\n");
    assert_eq!(
        fetches(&with_eval),
        [
            format!("onramp_fetch {train} || exit 4"),
            format!("onramp_fetch {eval} || exit 4")
        ]
    );
    // The training set named again as the eval set: fetched once.
    let twice = format!("{spec}\n[eval]\ndataset = \"{train}\"\n");
    assert_eq!(fetches(&twice), [format!("onramp_fetch {train} || exit 4")]);
    // An eval set the cluster holds is the trainer's to find, not fetched.
    let held = format!("{spec}\n[eval]\ndataset = \"alpaca-zh-eval\"\n");
    assert_eq!(fetches(&held).len(), 1);
}

/// The spec's text fields with `value` in one of them (the others keep the template's).
fn with_text(template: &str, key: &str, value: &str) -> Option<ValidSpec> {
    validated_with_text(template, key, value)?.0
}

/// What validation says of the spec with `value` in `key`; `None` when it cannot be written.
fn validated_with_text(
    template: &str,
    key: &str,
    value: &str,
) -> Option<(Option<ValidSpec>, Vec<jobspec::Diagnostic>)> {
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
    Some(jobspec::validate_toml(&toml))
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
                // Refused, and for this field: its text (not clean, empty, too long) or, for a
                // dataset, where it points (an absolute path, one that leaves the job's folder); or
                // the value cannot stand in a TOML string as written (a raw DEL).
                let path = if key == "name" { "name" } else { "data.dataset" };
                let refused_here = validated_with_text(template, key, &value).is_none_or(|(_, d)| {
                    d.iter()
                        .any(|d| d.is_error() && (d.path == path || d.code == jobspec::Code::Syntax))
                });
                proptest::prop_assert!(refused_here, "{value:?} in {key}");
            }
        }
    }
}
