//! The Slurm chroot for the Slurm integration tests: a Debian 13 root with slurmctld, slurmd,
//! slurmrestd (data parsers v0.0.40–42), munge and the JWT plugin, built once per machine with
//! mmdebstrap and shared by every clone (see `onramp_tests::slurm`).

use crate::cmd;
use std::process::Command;

/// Makes sure the chroot exists, and the host tools the test clusters need: mmdebstrap to build
/// it, iproute2's `ip` to give a cluster's nodes their networks.
pub fn ensure() -> Result<(), String> {
    let ready = onramp_tests::slurm::chroot_ready();
    let has = |bin: &str, probe: &str| cmd::output(Command::new(bin).arg(probe)).is_some();
    let mut missing = vec![];
    if !has("ip", "-V") {
        missing.push("iproute2");
    }
    if !ready && !has("mmdebstrap", "--version") {
        missing.push("mmdebstrap");
    }
    if ready && missing.is_empty() {
        return Ok(());
    }
    let root = cmd::output(Command::new("id").arg("-u")).as_deref() == Some("0\n");
    if !root {
        // Building a chroot and starting Slurm in it needs root; say so instead of failing here,
        // and the Slurm tests will say it again.
        eprintln!(
            "xtask: warning: the Slurm tests need root to build {} and run Slurm; they will fail",
            onramp_tests::slurm::chroot_dir().display()
        );
        return Ok(());
    }
    if !missing.is_empty() {
        // A machine that already had Chromium may never have fetched the package lists.
        cmd::run(
            "apt-get update",
            Command::new("apt-get")
                .args(["update", "-qq"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
        cmd::run(
            &format!("apt-get install {}", missing.join(" ")),
            Command::new("apt-get")
                .args(["install", "-y", "-qq"])
                .args(&missing)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
    }
    let dir = onramp_tests::slurm::ensure_chroot()?;
    eprintln!("xtask: Slurm chroot ready in {}", dir.display());
    Ok(())
}
