//! A real single-node Slurm for the tests, without systemd: munged, slurmctld, slurmd and
//! slurmrestd (JWT auth, data parsers v0.0.40–42) from a Debian 13 chroot, on loopback, with fake
//! GPUs declared through GRES (character devices made with mknod) so that GPU counts really gate
//! scheduling.
//!
//! The chroot is built once per machine (`cargo xtask setup` calls [`ensure_chroot`]) under
//! `~/.cache/onramp/slurm-chroot-<recipe>` and shared by every clone. Each [`Slurm`] runs in its own
//! mount namespace (`unshare -m`) with its own configuration, keys, ports and state folder under
//! the chroot's `/run`, so several can run at once; dropping it kills every process of that
//! namespace (slurmstepd leaves the launcher's process group, never its namespace) and removes
//! its folder. Needs root (mount, chroot, mknod).

mod launcher;

use crate::process::{Service, free_port};
use crate::stack::random_hex;
use crate::wait;
use launcher::{LAUNCHER, free_subnet, kill_all};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Names the chroot's contents: bump it when [`PACKAGES`] or the suite change.
pub const RECIPE: &str = "trixie-1";
pub const SUITE: &str = "trixie";
pub const PACKAGES: &[&str] = &[
    "slurmctld",
    "slurmd",
    "slurmrestd",
    "munge",
    "slurm-client",
    "slurm-wlm-jwt-plugin",
    "curl",
];
const READY_MARK: &str = ".onramp-ready";

/// Where the chroot lives: `ONRAMP_SLURM_CHROOT`, else the machine-wide cache.
pub fn chroot_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("ONRAMP_SLURM_CHROOT") {
        return PathBuf::from(p);
    }
    crate::paths::tools_dir()
        .parent()
        .map_or_else(|| PathBuf::from("/tmp"), Path::to_path_buf)
        .join(format!("slurm-chroot-{RECIPE}"))
}

/// Whether a complete chroot is there (a build that died half-way never gets the mark).
pub fn chroot_ready() -> bool {
    chroot_dir().join(READY_MARK).is_file()
}

/// Builds the chroot with mmdebstrap unless it is there (about 2 minutes and 200 MB, once per
/// machine). It is built beside its final place and renamed, so a failed build leaves nothing
/// that looks usable.
pub fn ensure_chroot() -> Result<PathBuf, String> {
    let dir = chroot_dir();
    if chroot_ready() {
        return Ok(dir);
    }
    let parent = dir.parent().ok_or("the chroot path has no parent")?;
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let tmp = parent.join(format!(
        "slurm-chroot-{RECIPE}.partial-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "onramp: building the Slurm chroot in {} (once per machine, about 2 minutes)",
        dir.display()
    );
    let out = Command::new("mmdebstrap")
        .args(["--variant=apt", "--quiet"])
        .arg(format!("--include={}", PACKAGES.join(",")))
        .arg(SUITE)
        .arg(&tmp)
        .output()
        .map_err(|e| format!("cannot run mmdebstrap (apt-get install mmdebstrap): {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(format!(
            "mmdebstrap {SUITE} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(tmp.join(READY_MARK), PACKAGES.join("\n"))
        .map_err(|e| format!("cannot mark the chroot ready: {e}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir).map_err(|e| format!("cannot move the chroot in place: {e}"))?;
    Ok(dir)
}

/// A running Slurm; dropping it stops every process it started and removes its folder.
pub struct Slurm {
    /// slurmrestd's base URL.
    pub url: String,
    pub user: String,
    /// A JWT for `user` (valid a day).
    pub token: String,
    pub gpus: u32,
    /// Nodes, each with `gpus` GPUs.
    pub nodes: u32,
    /// This machine's address as the nodes reach it: loopback for one node, the cluster
    /// network's `10.x.y.1` for several (where a service the jobs call must listen).
    pub host_ip: String,
    chroot: PathBuf,
    /// The run folder as the jobs see it (inside the chroot).
    run_inner: String,
    launcher: Option<Service>,
    namespace: Option<String>,
}

impl Slurm {
    /// Starts Slurm with `gpus` fake GPUs and waits until slurmrestd answers a ping and the node
    /// is idle.
    pub fn start(gpus: u32) -> Result<Slurm, String> {
        Slurm::start_with_binds(gpus, &[])
    }

    /// `start`, with host folders bound into the chroot for this Slurm only: (host folder,
    /// inside path). An inside path that is relative lies in this Slurm's run folder
    /// ([`Slurm::run_dir`]); an absolute one must already exist in the chroot (e.g.
    /// `/usr/local/bin`, where a cluster installs `onramp-runner`).
    pub fn start_with_binds(gpus: u32, binds: &[(PathBuf, String)]) -> Result<Slurm, String> {
        Slurm::start_cluster(1, gpus, binds)
    }

    /// `start_with_binds` for a cluster of `nodes` nodes (`onramp0`, `onramp1`, …) with `gpus`
    /// fake GPUs each: with more than one, each node has a network and a hostname of its own
    /// (see [`LAUNCHER`]), so jobs across nodes talk over a network as on a real cluster.
    pub fn start_cluster(
        nodes: u32,
        gpus: u32,
        binds: &[(PathBuf, String)],
    ) -> Result<Slurm, String> {
        if !chroot_ready() {
            return Err(format!(
                "no Slurm chroot at {}: run `cargo xtask setup`",
                chroot_dir().display()
            ));
        }
        let chroot = chroot_dir();
        let run_inner = format!("/run/onramp-slurm-{}", random_hex(6));
        let host_run = chroot.join(run_inner.trim_start_matches('/'));
        std::fs::create_dir_all(&host_run)
            .map_err(|e| format!("cannot create {}: {e}", host_run.display()))?;
        let (ctld, slurmd, rest) = (free_port()?, free_port()?, free_port()?);
        let subnet = free_subnet()?;
        let mut cmd = Command::new("unshare");
        cmd.args([
            "-m",
            "--propagation",
            "private",
            "bash",
            "-c",
            LAUNCHER,
            "onramp-slurm",
        ])
        .arg(&chroot)
        .arg(&run_inner)
        .args([ctld, slurmd, rest].map(|p| p.to_string()))
        .arg(gpus.to_string())
        .arg(nodes.max(1).to_string())
        .arg(&subnet)
        .arg(random_hex(6));
        for (host, inner) in binds {
            let inner = if inner.starts_with('/') {
                if !chroot.join(inner.trim_start_matches('/')).is_dir() {
                    return Err(format!("{inner} is not a folder in the Slurm chroot"));
                }
                inner.clone()
            } else {
                format!("{run_inner}/{inner}")
            };
            cmd.arg(host).arg(inner);
        }
        let log = host_run.with_extension("log");
        let launcher = Service::start("slurm", cmd, &log, false)?;
        let mut slurm = Slurm {
            url: format!("http://127.0.0.1:{rest}"),
            user: "root".into(),
            token: String::new(),
            gpus,
            nodes: nodes.max(1),
            host_ip: launcher::host_address(nodes, &subnet),
            chroot,
            run_inner,
            launcher: Some(launcher),
            namespace: None,
        };
        let token_file = slurm.host_path(&format!("{}/token", slurm.run_inner));
        let launcher = slurm.launcher.as_mut().ok_or("no launcher")?;
        let token = wait::until("Slurm to issue a token", Duration::from_secs(60), || {
            if let Some(s) = launcher.exited() {
                return Err(format!(
                    "the Slurm launcher exited with {s}: {}",
                    launcher.log_tail(3000)
                ));
            }
            Ok(std::fs::read_to_string(&token_file)
                .ok()
                .and_then(|t| t.trim().strip_prefix("SLURM_JWT=").map(str::to_string)))
        })?;
        slurm.token = token;
        slurm.namespace = std::fs::read_link(format!("/proc/{}/ns/mnt", launcher.pid()))
            .ok()
            .map(|p| p.display().to_string());
        slurm.wait_idle()?;
        Ok(slurm)
    }

    /// Waits until slurmctld has every node registered and idle.
    pub fn wait_idle(&self) -> Result<(), String> {
        wait::until(
            "the Slurm nodes to be idle",
            Duration::from_secs(60),
            || {
                let (status, v) = self.request("GET", "/slurm/v0.0.42/nodes", None);
                if status != 200 {
                    return Err(format!("HTTP {status}: {v}"));
                }
                let nodes = v["nodes"].as_array().cloned().unwrap_or_default();
                let idle = nodes
                    .iter()
                    .filter(|n| {
                        n["state"]
                            .as_array()
                            .is_some_and(|s| s.iter().any(|x| x == "IDLE"))
                    })
                    .count();
                if idle == self.nodes as usize {
                    Ok(Some(()))
                } else {
                    Err(format!("{idle} of {} idle: {v}", self.nodes))
                }
            },
        )
        .map_err(|e| format!("{e}\n{}", self.log_tail()))
    }

    /// Runs `scontrol` with `args` on this cluster, as its operator would; its output.
    pub fn scontrol(&self, args: &[&str]) -> Result<String, String> {
        let launcher = self.launcher.as_ref().ok_or("no launcher")?;
        let out = Command::new("nsenter")
            .args(["-t", &launcher.pid().to_string(), "-m", "--", "env"])
            .arg(format!("SLURM_CONF={}/slurm.conf", self.run_inner))
            .arg("chroot")
            .arg(&self.chroot)
            .arg("/usr/bin/scontrol")
            .args(args)
            .output()
            .map_err(|e| format!("cannot run nsenter: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("scontrol {args:?}: {}: {text}", out.status))
        }
    }

    /// The process holding node `i`'s namespaces (several nodes only).
    fn node_holder(&self, i: u32) -> Result<String, String> {
        let file = self.host_path(&format!("{}/node{i}.pid", self.run_inner));
        std::fs::read_to_string(&file)
            .map(|p| p.trim().to_string())
            .map_err(|e| format!("no node {i} ({}): {e}", file.display()))
    }

    /// Node `i` dies as a machine does: every process on it (its slurmd, the steps and the
    /// training it runs) is killed at once; it keeps its address, so it can come back.
    pub fn kill_node(&self, i: u32) -> Result<(), String> {
        let holder = self.node_holder(i)?;
        let net = std::fs::read_link(format!("/proc/{holder}/ns/net"))
            .map_err(|e| format!("node {i}'s namespace: {e}"))?;
        kill_all(|pid| {
            pid.to_string() != holder
                && std::fs::read_link(format!("/proc/{pid}/ns/net")).is_ok_and(|n| n == net)
        });
        Ok(())
    }

    /// Starts node `i`'s slurmd again (after [`Slurm::kill_node`]); Slurm returns it to service
    /// when it registers.
    pub fn restart_node(&self, i: u32) -> Result<(), String> {
        let holder = self.node_holder(i)?;
        let status = Command::new("nsenter")
            .args(["-t", &holder, "-m", "-n", "-u", "--"])
            .arg("env")
            .arg(format!("SLURM_CONF={}/slurm.conf", self.run_inner))
            .arg("chroot")
            .arg(&self.chroot)
            .args(["/usr/sbin/slurmd", "-N", &format!("onramp{i}"), "-f"])
            .arg(format!("{}/slurm-onramp{i}.conf", self.run_inner))
            .status()
            .map_err(|e| format!("cannot run nsenter: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("slurmd on onramp{i} did not start: {status}"))
        }
    }

    /// This Slurm's run folder, as the jobs see it.
    pub fn run_dir(&self) -> &str {
        &self.run_inner
    }

    /// The `python` the test cluster's nodes run onramp-train with. The trainer's environment
    /// (`cargo xtask setup`'s, or `ONRAMP_PYTHON`) is built on this machine's Python 3.11, while the
    /// nodes are a Debian 13 chroot with another Python; a node of a real cluster has the
    /// environment installed natively. Here the node runs this machine's interpreter, seen under
    /// `<run>/host`, with this machine's loader and libraries, and the environment's packages and
    /// the trainer's source on its path. (The loader is named by its real path: `/lib64`'s is an
    /// absolute link, which inside the chroot would lead to the chroot's own, newer loader.)
    pub fn trainer_python(&self) -> String {
        let host = format!("{}/host", self.run_dir());
        let venv_python = std::env::var_os("ONRAMP_PYTHON")
            .map(std::path::PathBuf::from)
            .expect("ONRAMP_PYTHON names the trainer's environment (cargo xtask test sets it)");
        let venv = venv_python
            .parent()
            .and_then(|b| b.parent())
            .expect("ONRAMP_PYTHON is <venv>/bin/python");
        let site = std::fs::read_dir(venv.join("lib"))
            .expect("the environment's lib folder")
            .flatten()
            .map(|d| d.path().join("site-packages"))
            .find(|p| p.is_dir())
            .expect("the environment's site-packages");
        let interpreter = std::fs::canonicalize(&venv_python).expect("the environment's python");
        // In the cluster's run folder, which goes when the cluster stops; named by its path
        // inside the chroot.
        let inner_dir = format!("{}/python-{}", self.run_inner, crate::stack::random_hex(6));
        let dir = self.host_path(&inner_dir);
        std::fs::create_dir_all(dir.join("site")).expect("a temp folder");
        let inner_wrapper = format!("{inner_dir}/python");
        // `site.addsitedir` also reads the environment's .pth files, as its own interpreter would;
        // `sys.executable` is this wrapper, so that what starts Python again (torchrun's ranks,
        // multiprocessing) starts it the same way.
        std::fs::write(
            dir.join("site/sitecustomize.py"),
            format!(
                "import site\nimport sys\nsite.addsitedir({:?})\nsys.executable = {inner_wrapper:?}\n",
                format!("{host}{}", site.display())
            ),
        )
        .expect("sitecustomize.py");
        let trainer_src = crate::paths::repo_root().join("trainer/src");
        let script = format!(
            "#!/bin/sh\nH={host}\nexport PYTHONHOME=\"$H/usr\"\n\
             export PYTHONPATH=\"{inner_dir}/site:$H{src}\"\n\
             exec \"$H/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\" --library-path \"$H/lib/x86_64-linux-gnu:$H/usr/lib/x86_64-linux-gnu\" \"$H{interp}\" \"$@\"\n",
            src = trainer_src.display(),
            interp = interpreter.display(),
        );
        // torchrun, which the GPU jobs' launch line runs from the environment's `bin/`.
        let torchrun = format!("#!/bin/sh\nexec {inner_wrapper} -m torch.distributed.run \"$@\"\n");
        use std::os::unix::fs::PermissionsExt;
        for (name, text) in [("python", script), ("torchrun", torchrun)] {
            let file = dir.join(name);
            std::fs::write(&file, text).expect("a wrapper");
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755))
                .expect("a wrapper's mode");
        }
        inner_wrapper
    }

    /// A path inside the chroot, seen from the host.
    pub fn host_path(&self, inner: &str) -> PathBuf {
        self.chroot.join(inner.trim_start_matches('/'))
    }

    /// A fresh folder for a job (as the job sees it), created on the host side.
    pub fn job_dir(&self, name: &str) -> Result<String, String> {
        let inner = format!("{}/jobs/{name}", self.run_inner);
        let host = self.host_path(&inner);
        std::fs::create_dir_all(&host)
            .map_err(|e| format!("cannot create {}: {e}", host.display()))?;
        Ok(inner)
    }

    /// The launcher's and the daemons' output, for failure messages.
    pub fn log_tail(&self) -> String {
        self.launcher
            .as_ref()
            .map(|l| l.log_tail(4000))
            .unwrap_or_default()
    }

    /// How long Slurm job `id` has been suspended (`scontrol suspend`) by Slurm's clock, in
    /// seconds, while it is.
    pub fn suspended_for(&self, id: u64) -> Option<i64> {
        let (_, body) = self.request("GET", &format!("/slurm/v0.0.40/job/{id}"), None);
        let job = &body["jobs"][0];
        let since = job["suspend_time"]["number"].as_i64()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs();
        (job["job_state"][0] == "SUSPENDED").then(|| i64::try_from(now).unwrap_or(0) - since)
    }

    /// A slurmrestd request with the JWT headers → (status, JSON body).
    pub fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.url);
        let agent = crate::http();
        let resp = match (method, body) {
            // Exactly `application/json`: slurmrestd does not recognise the `; charset=utf-8`
            // that ureq's send_json adds, and answers "Unable to parse query".
            ("POST", Some(b)) => agent
                .post(&url)
                .header("X-SLURM-USER-NAME", &self.user)
                .header("X-SLURM-USER-TOKEN", &self.token)
                .header("Content-Type", "application/json")
                .send(b.to_string()),
            ("DELETE", _) => agent
                .delete(&url)
                .header("X-SLURM-USER-NAME", &self.user)
                .header("X-SLURM-USER-TOKEN", &self.token)
                .call(),
            _ => agent
                .get(&url)
                .header("X-SLURM-USER-NAME", &self.user)
                .header("X-SLURM-USER-TOKEN", &self.token)
                .call(),
        };
        match resp {
            Ok(r) => {
                let status = r.status().as_u16();
                let text = r.into_body().read_to_string().unwrap_or_default();
                (
                    status,
                    serde_json::from_str(&text).unwrap_or(Value::String(text)),
                )
            }
            Err(e) => (0, Value::String(e.to_string())),
        }
    }

    /// Kills every process in this Slurm's mount namespace (never the caller's own).
    fn kill_namespace(&self) {
        let Some(ns) = &self.namespace else { return };
        let own = std::fs::read_link("/proc/self/ns/mnt").map(|p| p.display().to_string());
        if own.map_or(true, |own| own == *ns) {
            return;
        }
        kill_all(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/mnt"))
                .is_ok_and(|l| l.display().to_string() == *ns)
        });
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        self.kill_namespace();
        self.launcher.take();
        let host_run = self.host_path(&self.run_inner);
        let _ = std::fs::remove_dir_all(&host_run);
        let _ = std::fs::remove_file(host_run.with_extension("log"));
    }
}
