//! Child processes in their own process group, stopped (the whole group) when dropped.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A started service. Dropping it stops its whole process group: wrangler starts workerd, and a
/// job starts its own children, so killing only the direct child would leak processes.
pub struct Service {
    pub name: String,
    child: Child,
    pub log_path: PathBuf,
}

impl Service {
    /// Starts `cmd` in a new process group with stdout and stderr appended to `log_path`; when
    /// `inherit_output` is set, output goes to the terminal instead (for `cargo xtask dev`).
    pub fn start(
        name: &str,
        mut cmd: Command,
        log_path: &Path,
        inherit_output: bool,
    ) -> Result<Service, String> {
        if !inherit_output {
            let log = File::create(log_path)
                .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
            let log2 = log
                .try_clone()
                .map_err(|e| format!("cannot reopen {}: {e}", log_path.display()))?;
            cmd.stdout(Stdio::from(log)).stderr(Stdio::from(log2));
        }
        cmd.stdin(Stdio::null()).process_group(0);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name} ({cmd:?}): {e}"))?;
        Ok(Service {
            name: name.to_string(),
            child,
            log_path: log_path.to_path_buf(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited, with its status.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The tail of the service's log, for error messages.
    pub fn log_tail(&self, max_bytes: usize) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let start = text.len().saturating_sub(max_bytes);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_string()
    }

    /// Stops the process group: SIGTERM, then SIGKILL if it is still there after a grace period.
    pub fn stop(&mut self) {
        if self.exited().is_some() {
            signal_group(self.pid(), "KILL");
            return;
        }
        signal_group(self.pid(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        // Whatever is left of the group (workerd under wrangler, a job's children) goes now.
        signal_group(self.pid(), "KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sends a signal to a whole process group through `kill(1)`, which keeps this crate free of
/// unsafe code.
pub fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A free TCP port on loopback. Another process could take it before we bind it; the services
/// we start fail loudly if so.
pub fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Writes the runner's secret to `secret` in its state folder, readable by this user only, as an
/// operator would (`--secret-file`); returns the file.
pub fn write_secret(
    state_dir: &std::path::Path,
    secret: &str,
) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(state_dir).map_err(|e| format!("{}: {e}", state_dir.display()))?;
    let file = state_dir.join("secret");
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{secret}\n").as_bytes()))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(file)
}
