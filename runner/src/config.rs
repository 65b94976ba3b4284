//! Command-line configuration of the runner.

use std::net::SocketAddr;
use std::path::PathBuf;

/// How the runner was asked to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; loopback by default because the edge is the only client.
    pub addr: SocketAddr,
    /// Where jobs' working directories and the runner's own state live.
    pub state_dir: PathBuf,
    /// The shared secret the edge sends as `Authorization: Bearer <secret>`.
    pub secret: String,
    /// The cards (CPU here) this runner declares to the edge (`"cards": {"cpu": N}` in its
    /// `BACKENDS` entry): every job takes one, so at most this many run at once and the rest
    /// wait as `queued`.
    pub cards: usize,
    /// The shared reference data (models, corpora) copied into the state dir at start.
    pub shared: PathBuf,
    /// The file the secret was read from, which the sandbox hides from jobs.
    pub secret_file: Option<PathBuf>,
    /// Whether jobs run in the sandbox (`sandbox.rs`).
    pub sandbox: crate::sandbox::Mode,
    /// How long a job's folder stays after the job ended, as a Slurm backend's `retention`.
    pub retention: std::time::Duration,
    /// The benchmark tasks jobs may score (`eval.tasks`): see `Assets::eval_tasks`.
    pub eval_tasks: Option<PathBuf>,
}

/// How long a job's folder stays by default: a Slurm backend's default `retention`.
pub const DEFAULT_RETENTION: &str = "7d";

/// The cards a runner declares by default, as the local stack's `BACKENDS` does: one training
/// job at a time gets the machine's cores to itself (two at once halve each other's speed).
pub const DEFAULT_CARDS: usize = 1;

/// The runner's command line: `onramp-runner [OPTIONS]` serves, `onramp-runner tiny-train …` is
/// a training job's process.
#[derive(Debug, clap::Parser)]
#[command(
    name = "onramp-runner",
    version,
    about = "The local backend: runs Onramp jobs as processes on this machine",
    after_help = "The edge authenticates with the secret in the file --secret-file names (or \
$ONRAMP_RUNNER_SECRET_FILE; readable by the runner's user only), else in $ONRAMP_RUNNER_SECRET; \
never on the command line, where a process listing would show it.\n\nExit codes: 0 stopped cleanly; 1 a \
failure while serving or training; 2 usage error or no secret.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Train model-tiny as a tiny-train job (the runner starts this itself)
    ///
    /// Reports to $ONRAMP_REPORT_URL with $ONRAMP_REPORT_TOKEN when set.
    TinyTrain(crate::tiny_args::TinyArgs),
}

/// How to serve.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback: the edge is the only client)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8788")]
    pub addr: SocketAddr,
    /// Where jobs' working directories and the runner's own state live
    #[arg(long, value_name = "DIR", default_value = ".onramp/runner")]
    pub state_dir: PathBuf,
    /// The cards (CPU here) this runner declares to the edge: one job runs per card, later ones
    /// wait as queued (`--max-jobs` is its old name)
    #[arg(long, alias = "max-jobs", value_name = "N", default_value_t = DEFAULT_CARDS,
          value_parser = crate::tiny_args::positive)]
    pub cards: usize,
    /// The shared reference data (models, corpora) [default: $ONRAMP_SHARED, else ../shared]
    #[arg(long, value_name = "DIR")]
    pub shared: Option<PathBuf>,
    /// The file holding the secret the edge authenticates with (mode 600: no one else may read
    /// it); jobs never see it [default: $ONRAMP_RUNNER_SECRET_FILE]
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Whether jobs run in a sandbox of mount and PID namespaces that shows them only their own
    /// folder and the shared assets
    #[arg(long, value_enum, value_name = "MODE", default_value_t = crate::sandbox::Mode::Auto)]
    pub sandbox: crate::sandbox::Mode,
    /// How long a job's folder (its log, checkpoints and outputs) stays after the job ended,
    /// like "7d", "36h" or "90m"; its record stays
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_RETENTION,
          value_parser = retention)]
    pub retention: std::time::Duration,
    /// The benchmark tasks jobs may score (`eval.tasks`): a folder of lm-evaluation-harness task
    /// YAMLs with their local data (jobs run offline); outside the state dir, which jobs do
    /// not see
    #[arg(long, value_name = "DIR")]
    pub eval_tasks: Option<PathBuf>,
}

/// Reads `--retention`: a duration such as a Slurm backend's `retention` takes.
fn retention(text: &str) -> Result<std::time::Duration, String> {
    jobspec::duration::parse_duration_s(text)
        .map(std::time::Duration::from_secs)
        .ok_or_else(|| {
            format!("{text:?} is not a duration; write one like \"7d\", \"36h\" or \"90m\"")
        })
}

impl ServeArgs {
    /// The configuration, with the secret from `--secret-file`, else `ONRAMP_RUNNER_SECRET`
    /// (given here as `secret`).
    pub fn config(self, secret: Option<String>) -> Result<Config, String> {
        let secret = match &self.secret_file {
            Some(f) => read_secret_file(f)?,
            None => secret.filter(|s| !s.is_empty()).ok_or(
                "ONRAMP_RUNNER_SECRET or --secret-file must be set: the edge authenticates with it",
            )?,
        };
        Ok(Config {
            addr: self.addr,
            state_dir: self.state_dir,
            secret,
            cards: self.cards,
            shared: self
                .shared
                .unwrap_or_else(crate::assets::Assets::shared_default),
            secret_file: self.secret_file,
            sandbox: self.sandbox,
            retention: self.retention,
            eval_tasks: self.eval_tasks,
        })
    }
}

/// The secret in `path`, its first line: refused when the file is empty or others may read it.
fn read_secret_file(path: &std::path::Path) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("--secret-file {shown}: {e}"))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "--secret-file {shown} may be read by others (mode {:o}): chmod 600 it",
            meta.permissions().mode() & 0o777
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("--secret-file {shown}: {e}"))?;
    let secret = text.lines().next().unwrap_or("").trim().to_string();
    if secret.is_empty() {
        return Err(format!("--secret-file {shown} is empty"));
    }
    Ok(secret)
}

/// Parses the serving options (`--addr --state-dir --cards --shared --secret-file --sandbox`);
/// the secret comes from a file or `ONRAMP_RUNNER_SECRET`, never the command line, so that it
/// never shows up in a process listing.
pub fn from_args(
    args: impl IntoIterator<Item = String>,
    secret: Option<String>,
) -> Result<Config, String> {
    use clap::Parser;
    let cli = Cli::try_parse_from(std::iter::once("onramp-runner".to_string()).chain(args))
        .map_err(|e| e.to_string())?;
    cli.serve.config(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_addr_and_state_dir() {
        let c = from_args(
            args(&["--addr", "127.0.0.1:9000", "--state-dir", "/tmp/x"]),
            Some("s".into()),
        )
        .unwrap();
        assert_eq!(c.addr.port(), 9000);
        assert_eq!(c.state_dir, PathBuf::from("/tmp/x"));
    }

    #[test]
    fn refuses_missing_secret_and_bad_addr() {
        assert!(
            from_args(args(&[]), None)
                .unwrap_err()
                .contains("ONRAMP_RUNNER_SECRET")
        );
        let err = from_args(args(&["--addr", "nope"]), Some("s".into())).unwrap_err();
        assert!(err.contains("--addr"), "{err}");
        assert!(from_args(args(&["--frob"]), Some("s".into())).is_err());
        let err = from_args(args(&["--max-jobs", "0"]), Some("s".into())).unwrap_err();
        assert!(
            err.contains("--cards"),
            "the old name reads as the new one: {err}"
        );
    }

    #[test]
    fn a_runner_declares_one_card_unless_told() {
        assert_eq!(from_args(args(&[]), Some("s".into())).unwrap().cards, 1);
        let c = from_args(args(&["--cards", "3"]), Some("s".into())).unwrap();
        assert_eq!(c.cards, 3);
        let c = from_args(args(&["--max-jobs", "2"]), Some("s".into())).unwrap();
        assert_eq!(c.cards, 2, "the old name still works");
        let err = from_args(args(&["--cards", "x"]), Some("s".into())).unwrap_err();
        assert!(err.contains("`x` is not a positive number"), "{err}");
    }

    #[test]
    fn the_secret_file_is_read_only_when_no_one_else_may_read_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("onramp-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("secret");
        std::fs::write(&f, "s3cret\n").unwrap();
        let with_file = |mode: u32| {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            let a = args(&["--secret-file", f.to_str().unwrap()]);
            from_args(a, Some("from-env".into()))
        };
        let c = with_file(0o600).unwrap();
        assert_eq!(c.secret, "s3cret", "the file wins over the environment");
        assert_eq!(c.secret_file.as_deref(), Some(f.as_path()));
        let err = with_file(0o644).unwrap_err();
        assert!(err.contains("chmod 600") && err.contains("644"), "{err}");
        std::fs::write(&f, "\n").unwrap();
        assert!(with_file(0o600).unwrap_err().contains("is empty"));
        let gone = from_args(args(&["--secret-file", "/no/such/secret"]), None).unwrap_err();
        assert!(gone.contains("/no/such/secret"), "{gone}");
        std::fs::remove_dir_all(&dir).unwrap();
        let c = from_args(args(&["--sandbox", "off"]), Some("s".into())).unwrap();
        assert_eq!(c.sandbox, crate::sandbox::Mode::Off);
        assert!(from_args(args(&["--sandbox", "maybe"]), Some("s".into())).is_err());
    }

    #[test]
    fn an_ended_jobs_folder_stays_seven_days_unless_told() {
        use std::time::Duration;
        let c = from_args(args(&[]), Some("s".into())).unwrap();
        assert_eq!(c.retention, Duration::from_secs(7 * 86_400));
        let c = from_args(args(&["--retention", "36h"]), Some("s".into())).unwrap();
        assert_eq!(c.retention, Duration::from_secs(36 * 3600));
        let err = from_args(args(&["--retention", "soon"]), Some("s".into())).unwrap_err();
        assert!(
            err.contains("--retention") && err.contains("\"7d\""),
            "{err}"
        );
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
