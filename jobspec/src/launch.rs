//! Launch artifacts: the `deepspeed` / `torchrun` command lines and a complete sbatch script.
//!
//! The training entry point is `onramp-train` (`trainer/`, the Python module `onramp_train`),
//! given the run jobspec derived from the spec (`crate::trainer::RUN_FILE`, its ds_config in it):
//! it derives nothing itself. Every user-written string is shell-quoted; the job name is reduced
//! to safe characters because it lands in an `#SBATCH` line.

use crate::spec::{ModelRef, Task};
use crate::validate::ValidSpec;
use serde::Serialize;

/// Every generated launch artifact of a spec.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Artifacts {
    /// Pretty-printed ds_config.json (empty for the CPU runner, which does not use DeepSpeed),
    /// with DeepSpeed's own optimizer and scheduler for running it outside onramp-train; a job
    /// runs `crate::deepspeed::engine_config`, the same numbers through the trainer's.
    pub ds_config: String,
    /// Single-node launch with the DeepSpeed launcher.
    pub deepspeed: String,
    /// Launch with torchrun (what the sbatch script runs on every node).
    pub torchrun: String,
    pub sbatch: String,
}

pub fn artifacts(v: &ValidSpec) -> Artifacts {
    let ds_config = if v.card().is_gpu {
        serde_json::to_string_pretty(&crate::deepspeed::ds_config(v)).unwrap_or_default()
    } else {
        String::new()
    };
    Artifacts {
        ds_config,
        deepspeed: deepspeed_command(v),
        torchrun: torchrun_command(v),
        sbatch: sbatch_script(v),
    }
}

/// Quotes a word for bash: bare when it is plainly safe, single-quoted otherwise, and ANSI-C
/// quoted (`$'…'`, with escapes) when it holds a character that would break the line. Validation
/// already refuses such characters in every free-text field; quoting them here as well means no
/// string can add a line to an artifact, whatever path it took.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c));
    if safe {
        s.to_string()
    } else if s.chars().any(crate::validate::is_refused) {
        let mut out = String::from("$'");
        for c in s.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                c if crate::validate::is_refused(c) => {
                    let n = u32::from(c);
                    if n < 0x80 {
                        out.push_str(&format!("\\x{n:02x}"));
                    } else {
                        out.push_str(&format!("\\u{n:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A job name safe for `#SBATCH --job-name` and file names.
pub fn safe_name(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "onramp-job".to_string()
    } else {
        cleaned
    }
}

/// What every launcher runs: the trainer module with the run jobspec derived (`crate::trainer`,
/// the ds_config in it), so there are no other flags to keep in step.
const TRAINER_ARGS: [&str; 1] = [crate::trainer::RUN_FILE];

/// The CPU card's command: the built-in tiny-train, or the trainer in one process without
/// DeepSpeed.
fn cpu_command(v: &ValidSpec) -> String {
    if v.spec().task == Task::TinyTrain {
        tiny_command(v)
    } else {
        format!("python -m onramp_train {}", crate::trainer::RUN_FILE)
    }
}

fn join(lines: &[String]) -> String {
    lines.join(" \\\n    ")
}

/// `onramp-runner`'s tiny-train command for the CPU runner.
fn tiny_command(v: &ValidSpec) -> String {
    let s = v.spec();
    let model = match &s.model {
        ModelRef::Id(id) => id.clone(),
        ModelRef::Custom(_) => "custom".into(),
    };
    let t = &s.train;
    let mut lines = vec![
        "onramp-runner tiny-train".into(),
        format!("--model {}", shell_quote(&model)),
        format!("--dataset {}", shell_quote(&s.data.dataset)),
        format!("--steps {}", v.steps()),
        format!("--micro-batch {}", t.micro_batch),
        format!("--seq-len {}", s.data.seq_len),
        format!("--lr {}", t.lr),
        format!("--warmup {}", t.warmup),
        format!("--seed {}", t.seed),
    ];
    // The optimizer's numbers the spec sets (model-tiny's defaults are jobspec's).
    let optim = [
        ("--weight-decay", t.weight_decay),
        ("--beta1", t.adam_beta1),
        ("--beta2", t.adam_beta2),
        ("--eps", t.adam_epsilon),
        ("--grad-clip", t.max_grad_norm),
    ];
    lines.extend(
        optim
            .into_iter()
            .filter_map(|(flag, x)| x.map(|x| format!("{flag} {x}"))),
    );
    join(&lines)
}

/// Single-node launch with the DeepSpeed launcher.
pub fn deepspeed_command(v: &ValidSpec) -> String {
    if !v.card().is_gpu {
        return cpu_command(v);
    }
    let s = v.spec();
    let (nodes, cards) = (s.resources.nodes, s.resources.cards_per_node);
    // The port is the job's own (`MASTER_PORT`, set by the sbatch script from the job id), so
    // jobs that share a node do not meet on the launcher's default one.
    let mut lines = vec![format!(
        "deepspeed --num_gpus {cards} --master_port \"${{MASTER_PORT:-29500}}\""
    )];
    if nodes > 1 {
        // `hostfile` is the sbatch script's, one line per node of the allocation.
        lines = vec![
            format!("deepspeed --hostfile hostfile --num_nodes {nodes} --num_gpus {cards}"),
            "--master_addr \"$MASTER_ADDR\" --master_port \"$MASTER_PORT\"".into(),
        ];
    }
    lines.push("--module onramp_train".into());
    lines.extend(TRAINER_ARGS.map(String::from));
    join(&lines)
}

/// torchrun, with c10d rendezvous so every node runs the same line.
pub fn torchrun_command(v: &ValidSpec) -> String {
    if !v.card().is_gpu {
        return cpu_command(v);
    }
    let s = v.spec();
    let mut lines = vec![
        "torchrun".to_string(),
        format!("--nnodes {}", s.resources.nodes),
        format!("--nproc_per_node {}", s.resources.cards_per_node),
    ];
    if s.resources.nodes > 1 {
        // c10d rendezvous on the first node, on the job's own port.
        lines.push("--rdzv_id \"$SLURM_JOB_ID\" --rdzv_backend c10d --rdzv_endpoint \"$MASTER_ADDR:$MASTER_PORT\"".into());
    } else {
        // One node: torchrun finds a free port itself, so jobs sharing a node never collide.
        lines.push("--standalone".into());
    }
    lines.push("-m onramp_train".into());
    lines.extend(TRAINER_ARGS.map(String::from));
    join(&lines)
}

/// Slurm's `D-HH:MM:SS`.
pub fn slurm_time(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        (seconds % 86_400) / 3600,
        (seconds % 3600) / 60,
        seconds % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// The job's own rendezvous port, from its id, then the next one nothing on this node (the
/// first of the allocation, where the rendezvous listens) answers on: two jobs that share a
/// first node, whose ids meet modulo 20000, do not meet on one port.
const RENDEZVOUS_PORT: &str = "export MASTER_PORT=$((20000 + ${SLURM_JOB_ID:-0} % 20000))\n\
    for _ in $(seq 64); do\n\
    \x20 (: <\"/dev/tcp/127.0.0.1/$MASTER_PORT\") 2>/dev/null || break\n\
    \x20 MASTER_PORT=$((20000 + (MASTER_PORT - 19999) % 20000))\n\
    done\n";

/// A complete sbatch script: resources, environment, the trainer's run written next to the job,
/// and one torchrun per node under srun.
pub fn sbatch_script(v: &ValidSpec) -> String {
    let s = v.spec();
    let r = &s.resources;
    let name = safe_name(&s.name);
    let mut out = String::new();
    out.push_str("#!/bin/bash\n");
    out.push_str(&format!("#SBATCH --job-name={name}\n"));
    out.push_str(&format!("#SBATCH --nodes={}\n", r.nodes));
    out.push_str("#SBATCH --ntasks-per-node=1\n");
    if v.card().is_gpu {
        out.push_str(&format!("#SBATCH --gres=gpu:{}\n", r.cards_per_node));
        out.push_str(&format!(
            "#SBATCH --cpus-per-task={}\n",
            8 * r.cards_per_node
        ));
    } else {
        out.push_str("#SBATCH --cpus-per-task=4\n");
    }
    out.push_str(&format!(
        "#SBATCH --time={}\n",
        slurm_time(v.time_limit_s())
    ));
    out.push_str("#SBATCH --output=%x-%j.out\n");
    // A job stopped by a failed node or a preemption runs again in its own folder, where the
    // trainer resumes from the checkpoint it saved on Slurm's SIGTERM.
    out.push_str("#SBATCH --requeue\n");
    // The script's comments are in both languages: it is one file, whoever reads it.
    let model = crate::validate::one_line(v.model_name());
    out.push_str(&format!(
        "# Generated by Onramp for {model} on {} × {} ({} step(s), {} tokens).\n\
         # 由 Onramp 为 {model} 生成，运行于 {} × {}（{} 步，{} 个 token）。\n",
        v.world_size(),
        v.card().display,
        v.steps(),
        v.train_tokens(),
        v.world_size(),
        v.card().display,
        v.steps(),
        v.train_tokens()
    ));
    out.push_str("set -euo pipefail\n\n");
    out.push_str(JOB_FOLDER);
    out.push_str(
        "export MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\"\n",
    );
    out.push_str(RENDEZVOUS_PORT);
    // The backend's `env` may set it (fewer cores per rank than 8).
    out.push_str("export OMP_NUM_THREADS=\"${OMP_NUM_THREADS:-8}\"\n");
    out.push_str("export TOKENIZERS_PARALLELISM=false\n");
    if v.card().is_gpu && r.nodes > 1 {
        // The DeepSpeed launcher's hostfile (`deepspeed_command`), from the allocation.
        out.push_str(&format!(
            "scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed 's/$/ slots={}/' > hostfile\n",
            r.cards_per_node
        ));
    }
    if v.card().is_gpu {
        // PyTorch's current name (`NCCL_ASYNC_ERROR_HANDLING` is deprecated).
        out.push_str("export TORCH_NCCL_ASYNC_ERROR_HANDLING=1\n");
        out.push_str("export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    }
    if s.task != Task::TinyTrain {
        trainer_files(v, &mut out);
    }
    if v.card().is_gpu {
        // One task per node with the job's CPUs (some Slurm versions give a step one CPU).
        // Slurm sets SLURM_CPUS_PER_TASK only when the job asked for a count; slurmrestd's
        // submission of one CPU does not, and `set -u` must not end the job there.
        out.push_str(
            "srun --ntasks-per-node=1 ${SLURM_CPUS_PER_TASK:+--cpus-per-task=\"$SLURM_CPUS_PER_TASK\"} ",
        );
        out.push_str(&torchrun_command(v));
    } else {
        out.push('\n');
        out.push_str(&cpu_command(v));
    }
    out.push('\n');
    out
}

/// Every job works in a folder of its own, which its script creates: its spec, the trainer's
/// run, `out/` (checkpoints, the trained model, the trackers' files) and logs, so that no job
/// sees, resumes from or deletes another's files, and a requeued job finds its own checkpoints.
/// Onramp's edge names it `<work_dir>/<job id>` in `ONRAMP_JOB_DIR`; a script submitted by hand
/// gets a folder named by the Slurm job id (which a requeue keeps) where it was submitted.
pub const JOB_FOLDER: &str = "\
# The job's own folder: everything it writes stays in there.
# 作业自己的文件夹：它写的一切都留在里面。
ONRAMP_JOB_DIR=\"${ONRAMP_JOB_DIR:-$SLURM_SUBMIT_DIR/onramp-$SLURM_JOB_ID}\"
mkdir -p \"$ONRAMP_JOB_DIR\"
cd \"$ONRAMP_JOB_DIR\"
export ONRAMP_OUTPUT_DIR=\"$ONRAMP_JOB_DIR/out\"

";

/// The trainer's environment and input files: the backend names its Python in `ONRAMP_PYTHON`
/// (its `bin/` goes first on PATH, for torchrun, the trainer and DeepSpeed's ninja), and the run
/// jobspec derived is written next to the job (with the spec, for the record), so what runs is
/// what the Plan page shows.
fn trainer_files(v: &ValidSpec, out: &mut String) {
    out.push_str(
        "\n# The trainer's environment: the backend's ONRAMP_PYTHON, else python3 on PATH.\n\
         # 训练器的环境：后端的 ONRAMP_PYTHON，否则用 PATH 上的 python3。\n",
    );
    out.push_str("ONRAMP_PYTHON=\"${ONRAMP_PYTHON:-python3}\"\n");
    out.push_str("export PATH=\"$(dirname \"$(command -v \"$ONRAMP_PYTHON\")\"):$PATH\"\n");
    heredoc(
        out,
        "spec.toml",
        &crate::trainer::spec_toml(v),
        "ONRAMP_SPEC",
    );
    heredoc(
        out,
        crate::trainer::RUN_FILE,
        &crate::trainer::run_json(v),
        "ONRAMP_RUN",
    );
    out.push('\n');
}

/// `cat > FILE <<'END'` with an end word that no line of the text equals.
fn heredoc(out: &mut String, file: &str, text: &str, word: &str) {
    let mut end = word.to_string();
    while text.lines().any(|l| l == end) {
        end.push('_');
    }
    out.push_str(&format!(
        "\ncat > {file} <<'{end}'\n{}\n{end}\n",
        text.trim_end()
    ));
}
