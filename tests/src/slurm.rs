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

use crate::process::{Service, free_port};
use crate::stack::random_hex;
use crate::wait;
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

/// The script that runs inside the new mount namespace: private mounts, keys, configuration,
/// fake GPUs, the four daemons, and a JWT for root written to `token` once slurmctld answers.
/// Arguments: chroot, run folder (inside the chroot), ctld port, slurmd port, rest port, GPUs,
/// then pairs of (host folder, folder inside the chroot) to bind.
const LAUNCHER: &str = r#"set -eu
C=$1; R=$2; H=$C$R; GPUS=$6
mount -t proc proc "$C/proc"
mount --rbind /sys "$C/sys"
mkdir -p "$H/munge" "$H/state" "$H/spool" "$H/dev" "$H/jobs"
chmod 755 "$H" "$H/munge" "$H/jobs"
head -c 1024 /dev/urandom > "$H/munge.key"; chmod 600 "$H/munge.key"
head -c 32 /dev/urandom > "$H/jwt.key"; chmod 600 "$H/jwt.key"
for i in $(seq 0 $((GPUS - 1))); do mknod "$H/dev/gpu$i" c 195 "$i"; done
cat > "$H/slurm.conf" <<CONF
ClusterName=onramp
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$3
SlurmdPort=$4
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$R/munge/munge.socket
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$R/jwt.key
StateSaveLocation=$R/state
SlurmdSpoolDir=$R/spool
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=onramp0 NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1024 Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=onramp0 Default=YES MaxTime=INFINITE State=UP
CONF
echo "CgroupPlugin=disabled" > "$H/cgroup.conf"
if [ "$GPUS" -gt 0 ]; then
  printf 'AutoDetect=off\nNodeName=onramp0 Name=gpu File=%s/dev/gpu[0-%d]\n' "$R" $((GPUS - 1)) > "$H/gres.conf"
else
  echo "AutoDetect=off" > "$H/gres.conf"
fi
chmod 644 "$H"/*.conf
export SLURM_CONF=$R/slurm.conf
chroot "$C" /usr/sbin/munged -F --force --socket="$R/munge/munge.socket" --key-file="$R/munge.key" \
  --pid-file="$R/munged.pid" --log-file="$R/munged.log" --seed-file="$R/munge.seed" &
until [ -S "$H/munge/munge.socket" ]; do sleep 0.1; done
chroot "$C" /usr/sbin/slurmctld -D -i &
chroot "$C" /usr/sbin/slurmd -D -N onramp0 &
SLURM_JWT=daemon chroot "$C" /usr/sbin/slurmrestd -u nobody -g nogroup -a rest_auth/jwt \
  -s openapi/slurmctld "127.0.0.1:$5" &
until chroot "$C" /usr/bin/scontrol token username=root lifespan=86400 > "$H/token.tmp" 2>/dev/null; do
  sleep 0.2
done
# Host folders bound into the chroot, in this namespace only (what a cluster has on every node).
shift 6
while [ $# -ge 2 ]; do
  [ -d "$C$2" ] || mkdir -p "$H/${2#"$R"/}"
  mount --bind "$1" "$C$2"
  shift 2
done
mv "$H/token.tmp" "$H/token"
wait
"#;

/// A running Slurm; dropping it stops every process it started and removes its folder.
pub struct Slurm {
    /// slurmrestd's base URL.
    pub url: String,
    pub user: String,
    /// A JWT for `user` (valid a day).
    pub token: String,
    pub gpus: u32,
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
        .arg(gpus.to_string());
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
        wait::until("the Slurm node to be idle", Duration::from_secs(60), || {
            let (status, v) = slurm.request("GET", "/slurm/v0.0.42/nodes", None);
            if status != 200 {
                return Err(format!("HTTP {status}: {v}"));
            }
            let state = v.pointer("/nodes/0/state").cloned().unwrap_or(Value::Null);
            let idle = state
                .as_array()
                .is_some_and(|s| s.iter().any(|x| x == "IDLE"));
            if idle {
                Ok(Some(()))
            } else {
                Err(format!("node state {state}"))
            }
        })
        .map_err(|e| format!("{e}\n{}", slurm.log_tail()))?;
        Ok(slurm)
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
        let dir = crate::stack::unique_temp_dir("slurm-python");
        std::fs::create_dir_all(dir.join("site")).expect("a temp folder");
        // `site.addsitedir` also reads the environment's .pth files, as its own interpreter would.
        std::fs::write(
            dir.join("site/sitecustomize.py"),
            format!(
                "import site\nsite.addsitedir({:?})\n",
                format!("{host}{}", site.display())
            ),
        )
        .expect("sitecustomize.py");
        let trainer_src = crate::paths::repo_root().join("trainer/src");
        let script = format!(
            "#!/bin/sh\nH={host}\nexport PYTHONHOME=\"$H/usr\"\n\
             export PYTHONPATH=\"$H{site_dir}:$H{src}\"\n\
             exec \"$H/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\" --library-path \"$H/lib/x86_64-linux-gnu:$H/usr/lib/x86_64-linux-gnu\" \"$H{interp}\" \"$@\"\n",
            site_dir = dir.join("site").display(),
            src = trainer_src.display(),
            interp = interpreter.display(),
        );
        let wrapper = dir.join("python");
        std::fs::write(&wrapper, script).expect("the python wrapper");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
            .expect("the python wrapper's mode");
        format!("{host}{}", wrapper.display())
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
        for _ in 0..3 {
            let mut found = false;
            for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                let link = std::fs::read_link(entry.path().join("ns/mnt"));
                if link.is_ok_and(|l| l.display().to_string() == *ns) {
                    found = true;
                    let _ = Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .status();
                }
            }
            if !found {
                break;
            }
        }
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
