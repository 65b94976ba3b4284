//! The sandbox a job runs in, on Linux, from util-linux's `unshare` and `setpriv` (Debian's base
//! system has both): a mount and a PID namespace of the job's own, in which
//!
//! - the runner's state folder is covered by an empty read-only tmpfs, with only the job's own
//!   folder (read-write) and the shared assets (read-only) bound back into it, so the job sees no
//!   other job's folder, no job record (`records/`, its own included) and no secret kept there;
//! - every other file system is read-only to the job: its uid owns the runner's files (the
//!   runner's binary, the trainer's code and Python environment that every later job runs) or is
//!   root, so without this a job could change what other accounts' jobs run. The root file system
//!   must be remounted read-only (or the sandbox fails); any other mount that refuses (a mount
//!   locked by the namespace it came from) stays as it was; `/proc/sys` and `/sys` are read-only
//!   too. Its temporary files go to `.tmp` in its folder (`TMPDIR`, unless the job names its own);
//! - `/dev` is its own, read-only: the devices every program uses (`null`, `zero`, `full`,
//!   `random`, `urandom`, `tty`, the `fd` links, a pty instance of its own where the kernel
//!   allows one) and the accelerators' (`nvidia*`, `kfd`, `dri`, `infiniband`) bound from the
//!   machine's, not its disks, memory or kernel log, which a runner started as root would let
//!   its jobs (uid 0) open; `/dev/shm` is a tmpfs of its own, not the machine's that every job
//!   shares (unless the state folder is in it);
//! - `/proc` is the namespace's own, so the runner's process (and its environment) and the other
//!   jobs' processes are not there to read;
//! - the job runs with no capabilities at all (an empty bounding set, `no_new_privs`), so it can
//!   neither unmount what covers the state folder nor mount anything of its own.
//!
//! A runner that is not root asks for a user namespace too (`--user --map-root-user`), where the
//! kernel allows one. [`Sandbox::probe`] runs the sandbox once at start; where it does not work
//! the runner says so and (`--sandbox auto`, the default) runs jobs without it, or (`--sandbox
//! on`) refuses to start.
//!
//! The paths go to the script as its arguments, never into its text. Inside, `sh` is the
//! namespace's first process and waits for the job, so a signal to the job's process group
//! reaches the job itself; a job killed by signal N comes back as exit code 128 + N, which
//! [`Sandbox::status`] turns back into the signal. When the runner stops the job (SIGTERM to its
//! group), that `sh` waits until every process of the namespace has ended, not only the one it
//! started: the namespace ends with it, and a shell that dies at once must not take with it the
//! trainer it started, which is saving its checkpoint (the runner kills the whole group when its
//! grace time is over).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What sets up the job's view and then runs it: `sh -c SANDBOX_SH onramp-sandbox STATE JOB
/// ASSETS SECRET -- ARGV…` (SECRET empty when the secret lives in STATE or nowhere).
const SANDBOX_SH: &str = r#"set -eu
state=$1 job=$2 assets=$3 secret=$4
shift 5
alive() {
  for d in /proc/[0-9]*; do
    [ "$d" = /proc/1 ] && continue
    line=
    read -r line < "$d/stat" 2>/dev/null || continue
    case ${line##*)} in " Z"*|" X"*) ;; *) return 0 ;; esac
  done
  return 1
}
real=$(cd "$job" && pwd -P)
exec 3<"$job" 4<"$assets" 5</dev
mount -t tmpfs -o mode=0755,nosuid,size=64k onramp-dev /dev
for d in null zero full random urandom tty; do
  if [ -e "/proc/self/fd/5/$d" ]; then : > "/dev/$d"; mount --no-canonicalize --bind "/proc/self/fd/5/$d" "/dev/$d"; fi
done
for d in /proc/self/fd/5/nvidia* /proc/self/fd/5/kfd /proc/self/fd/5/dri /proc/self/fd/5/infiniband; do
  [ -e "$d" ] || continue
  n=/dev/${d#/proc/self/fd/5/}
  if [ -d "$d" ]; then mkdir "$n"; else : > "$n"; fi
  mount --no-canonicalize --rbind "$d" "$n"
done
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
mkdir /dev/shm /dev/pts
case $real/ in
  /dev/shm/*) mount --no-canonicalize --bind /proc/self/fd/5/shm /dev/shm ;;
  *) mount -t tmpfs -o mode=1777,nosuid,nodev onramp-shm /dev/shm ;;
esac
if mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 onramp-pts /dev/pts 2>/dev/null; then
  ln -s pts/ptmx /dev/ptmx
fi
mount -o remount,bind,ro /dev
exec 5<&-
mount -t tmpfs -o mode=0755,size=64k onramp-sandbox "$state"
mkdir -p "$job" "$assets"
mount --no-canonicalize --bind /proc/self/fd/3 "$job"
mount --no-canonicalize --bind /proc/self/fd/4 "$assets"
mount --no-canonicalize -o remount,bind,ro "$assets"
mount -o remount,bind,ro "$state"
if [ -n "$secret" ] && [ -e "$secret" ]; then mount --bind /dev/null "$secret"; fi
mount -o remount,bind,ro /
while read -r _ mp _; do
  case $mp in
    *\\*) mp=$(printf '%s' "$mp" | sed 's/\\\([0-7][0-7][0-7]\)/\\0\1/g'); mp=$(printf '%b' "$mp") ;;
  esac
  case $mp in
    / | "$job" | "$real" | /proc | /proc/* | /dev | /dev/*) continue ;;
  esac
  mount --no-canonicalize -o remount,bind,ro "$mp" 2>/dev/null || :
done < /proc/self/mounts
if mount --bind /proc/sys /proc/sys 2>/dev/null; then mount -o remount,bind,ro /proc/sys || :; fi
exec 3<&- 4<&-
cd "$job"
if [ -z "${TMPDIR:-}" ]; then mkdir -p .tmp; export TMPDIR="$job/.tmp"; fi
stopping=
trap 'stopping=1' TERM
setpriv --no-new-privs --bounding-set=-all --inh-caps=-all -- "$@" &
job=$!
rc=0
wait "$job" || rc=$?
if [ -n "$stopping" ]; then
  while alive; do sleep 0.1 || :; done
  rc=0
  wait "$job" || rc=$?
fi
exit "$rc"
"#;

/// How jobs are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// In the sandbox where it works here, else without it (with a warning)
    Auto,
    /// Always in the sandbox: the runner does not start where it does not work
    On,
    /// Never (a machine where the runner's user runs nothing else, or a test of the runner itself)
    Off,
}

/// The sandbox jobs run in: where the runner's state is, and the secret file to hide.
#[derive(Debug, Clone)]
pub struct Sandbox {
    state_dir: PathBuf,
    assets_dir: PathBuf,
    /// The runner's secret file, when it lies outside the state folder.
    secret_file: Option<PathBuf>,
    /// Whether the namespaces need a user namespace (a runner that is not root).
    user_ns: bool,
}

impl Sandbox {
    pub fn new(state_dir: &Path, assets_dir: &Path, secret_file: Option<&Path>) -> Sandbox {
        let state_dir = absolute(state_dir);
        let secret_file = secret_file
            .map(absolute)
            .filter(|f| !f.starts_with(&state_dir));
        Sandbox {
            assets_dir: absolute(assets_dir),
            state_dir,
            secret_file,
            user_ns: !nix::unistd::geteuid().is_root(),
        }
    }

    /// `argv` run in the sandbox, in `job_dir` (a folder under the state folder).
    pub fn command(&self, job_dir: &Path, argv: &[String]) -> (String, Vec<String>) {
        let mut args: Vec<String> = Vec::new();
        if self.user_ns {
            args.extend(["--user", "--map-root-user"].map(String::from));
        }
        args.extend(
            ["--mount", "--pid", "--fork", "--kill-child", "--mount-proc"].map(String::from),
        );
        args.extend(["--", "/bin/sh", "-c", SANDBOX_SH, "onramp-sandbox"].map(String::from));
        let path = |p: &Path| p.to_string_lossy().into_owned();
        args.push(path(&self.state_dir));
        args.push(path(&absolute(job_dir)));
        args.push(path(&self.assets_dir));
        args.push(self.secret_file.as_deref().map(path).unwrap_or_default());
        args.push("--".into());
        args.extend(argv.iter().cloned());
        ("unshare".into(), args)
    }

    /// Runs `true` in the sandbox, in a folder of its own under `jobs/`: `Ok` when the sandbox
    /// works on this machine, else what went wrong.
    pub fn probe(&self) -> Result<(), String> {
        let dir = self.state_dir.join("jobs").join(".sandbox-probe");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (program, args) = self.command(&dir, &["true".into()]);
        let out = Command::new(&program)
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output();
        let _ = std::fs::remove_dir_all(&dir);
        match out {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!(
                "{program} exited with {}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Err(format!("cannot run {program}: {e}")),
        }
    }

    /// The job's exit code and signal from the sandbox's exit code (see the module's note).
    pub fn status(code: Option<i32>, signal: Option<i32>) -> (Option<i32>, Option<i32>) {
        match code {
            Some(c) if (129..=128 + 64).contains(&c) => (None, Some(c - 128)),
            _ => (code, signal),
        }
    }
}

/// Where `program` is, as `execvp` would find it: a name with a `/` as is (relative to `cwd`),
/// else the first executable file of that name on `path`.
pub fn find_program(program: &str, path: &std::ffi::OsStr, cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = cwd.join(program);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_arguments_never_script_text() {
        let s = Sandbox {
            state_dir: "/srv/state".into(),
            assets_dir: "/srv/state/assets".into(),
            secret_file: None,
            user_ns: false,
        };
        let argv = vec!["sh".to_string(), "-c".into(), "echo $HOME; rm -rf /".into()];
        let (program, args) = s.command(Path::new("/srv/state/jobs/rj-1 'x'"), &argv);
        assert_eq!(program, "unshare");
        let script = args.iter().position(|a| a == SANDBOX_SH).unwrap();
        assert_eq!(
            args[script + 1..script + 6],
            [
                "onramp-sandbox",
                "/srv/state",
                "/srv/state/jobs/rj-1 'x'",
                "/srv/state/assets",
                ""
            ]
        );
        assert_eq!(args[script + 6], "--");
        assert_eq!(args[script + 7..], argv[..]);
        assert!(!args.contains(&"--user".to_string()));
    }

    #[test]
    fn a_secret_outside_the_state_is_hidden_by_name_and_one_inside_by_the_cover() {
        let inside = Sandbox::new(
            Path::new("/srv/state"),
            Path::new("/srv/state/assets"),
            Some(Path::new("/srv/state/secret")),
        );
        assert_eq!(inside.secret_file, None);
        let outside = Sandbox::new(
            Path::new("/srv/state"),
            Path::new("/srv/state/assets"),
            Some(Path::new("/etc/onramp/secret")),
        );
        assert_eq!(outside.secret_file, Some("/etc/onramp/secret".into()));
    }

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        let path = std::ffi::OsStr::new("/no/such/dir:/bin:/usr/bin");
        let cwd = Path::new("/");
        assert!(find_program("sh", path, cwd).is_some_and(|p| p.ends_with("sh")));
        assert_eq!(find_program("/bin/sh", path, cwd), Some("/bin/sh".into()));
        assert_eq!(find_program("bin/sh", path, cwd), Some("/bin/sh".into()));
        assert_eq!(find_program("/no/such/program", path, cwd), None);
        assert_eq!(find_program("no-such-program-here", path, cwd), None);
        assert_eq!(
            find_program("etc/passwd", path, cwd),
            None,
            "not executable"
        );
    }

    #[test]
    fn an_exit_code_past_128_is_the_signal_that_killed_the_job() {
        assert_eq!(Sandbox::status(Some(137), None), (None, Some(9)));
        assert_eq!(Sandbox::status(Some(143), None), (None, Some(15)));
        assert_eq!(Sandbox::status(Some(3), None), (Some(3), None));
        assert_eq!(Sandbox::status(Some(0), None), (Some(0), None));
        assert_eq!(Sandbox::status(None, Some(9)), (None, Some(9)));
    }
}
