//! The launch lines of a GPU job when jobs share nodes: one node's torchrun picks its own free
//! port (`--standalone`), many nodes meet on a port derived from the Slurm job id, the srun step
//! carries the job's CPUs, the DeepSpeed launcher gets a hostfile made from the allocation, and
//! no deprecated NCCL setting is exported. The port line is evaluated by bash itself.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use jobspec::{launch, validate_toml};
use std::process::Command;

const LORA: &str = include_str!("../specs/7b-lora-4090.toml");

fn artifacts(nodes: u32, cards: u32) -> launch::Artifacts {
    let toml = LORA
        .replace("nodes = 1", &format!("nodes = {nodes}"))
        .replace("cards_per_node = 1", &format!("cards_per_node = {cards}"));
    let (v, report) = validate_toml(&toml);
    let v = v.unwrap_or_else(|| panic!("{report:?}"));
    launch::artifacts(&v)
}

/// `MASTER_PORT` as the sbatch script's line sets it for a Slurm job id.
fn port_of(sbatch: &str, job_id: &str) -> u32 {
    let line = sbatch
        .lines()
        .find(|l| l.starts_with("export MASTER_PORT="))
        .unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("{line}; echo \"$MASTER_PORT\""))
        .env_clear()
        .env("SLURM_JOB_ID", job_id)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn one_node_finds_its_own_port_and_many_meet_on_the_jobs() {
    let one = artifacts(1, 2);
    assert!(one.torchrun.contains("--standalone"), "{}", one.torchrun);
    assert!(!one.torchrun.contains("rdzv"), "{}", one.torchrun);
    assert!(
        one.deepspeed
            .contains("--master_port \"${MASTER_PORT:-29500}\"")
    );
    assert!(
        !one.sbatch.contains("> hostfile"),
        "no hostfile on one node"
    );

    let many = artifacts(2, 2);
    assert!(!many.torchrun.contains("--standalone"), "{}", many.torchrun);
    assert!(
        many.torchrun
            .contains("--rdzv_backend c10d --rdzv_endpoint \"$MASTER_ADDR:$MASTER_PORT\""),
        "{}",
        many.torchrun
    );
    assert!(
        many.sbatch.contains(
            "scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed 's/$/ slots=2/' > hostfile\n"
        ),
        "{}",
        many.sbatch
    );
    assert!(
        many.deepspeed
            .starts_with("deepspeed --hostfile hostfile --num_nodes 2 --num_gpus 2"),
        "{}",
        many.deepspeed
    );
    assert!(many.deepspeed.contains("--master_port \"$MASTER_PORT\""));

    // Two jobs on the same first node get two ports; a port is a port.
    let (a, b) = (port_of(&many.sbatch, "4181"), port_of(&many.sbatch, "4182"));
    assert_ne!(a, b);
    for p in [
        a,
        b,
        port_of(&many.sbatch, "99999999"),
        port_of(&many.sbatch, ""),
    ] {
        assert!((20000..40000).contains(&p), "{p}");
    }
}

#[test]
fn the_step_gets_the_jobs_cpus_and_nccl_settings_are_current() {
    for (nodes, cards) in [(1, 1), (1, 4), (2, 2)] {
        let a = artifacts(nodes, cards);
        assert!(
            a.sbatch.contains(
                "srun --ntasks-per-node=1 ${SLURM_CPUS_PER_TASK:+--cpus-per-task=\"$SLURM_CPUS_PER_TASK\"} torchrun"
            ),
            "{}",
            a.sbatch
        );
        assert!(
            a.sbatch
                .contains(&format!("#SBATCH --cpus-per-task={}", 8 * cards))
        );
        assert!(
            a.sbatch
                .contains("export TORCH_NCCL_ASYNC_ERROR_HANDLING=1")
        );
        assert!(
            !a.sbatch.contains("export NCCL_ASYNC_ERROR_HANDLING"),
            "deprecated: {}",
            a.sbatch
        );
        assert!(!a.sbatch.contains("MASTER_PORT=29500"), "{}", a.sbatch);
    }
}
