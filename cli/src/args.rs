//! The command line as clap types: every command, its options and its help text. `main.rs`
//! dispatches on [`Command`]; `onramp completions SHELL` generates completions from the same
//! definition, so the help, the completions and the parser cannot disagree.

use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

/// Exit codes beyond clap's own (0 success, 2 usage error).
pub mod exit {
    /// The spec has errors (does not fit, cannot finish) or the edge refused the request.
    pub const REFUSED: u8 = 1;
    /// A file, stdin or the saved sign-in could not be read or written.
    pub const IO: u8 = 3;
}

#[derive(Debug, Parser)]
#[command(
    name = "onramp",
    version,
    about = "Plan GPU training jobs offline, submit them and watch them on an Onramp edge",
    after_help = "\
Exit codes: 0 success; 1 the spec has errors or the edge refused; 2 usage error; 3 a file, stdin \
or the saved sign-in could not be read or written.

Remote commands talk to --edge URL, else ONRAMP_EDGE, else the edge you logged in to, else \
http://localhost:8787; ONRAMP_TOKEN overrides the saved token."
)]
pub struct Cli {
    /// Language of the output: en or zh (else LC_ALL, LC_MESSAGES or LANG starting with zh)
    #[arg(long, global = true, value_enum, value_name = "LANG")]
    pub lang: Option<LangArg>,
    #[command(subcommand)]
    pub command: Command,
}

/// `--lang`'s values; `zh-CN` is accepted for `zh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LangArg {
    En,
    #[value(alias = "zh-CN", alias = "zh-cn")]
    Zh,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Diagnostics, memory per card, time and cost on every card type, fixes and launch artifacts
    ///
    /// Exits 1 when the spec has errors (including: does not fit, cannot finish).
    Plan(PlanArgs),
    /// Check a DeepSpeed config with DeepSpeed's own batch and offload rules
    DsCheck {
        /// The DeepSpeed config (ds_config.json), or - for stdin
        #[arg(value_name = "DS_CONFIG")]
        path: String,
        /// Data-parallel degree (world size), to check train_batch_size against
        #[arg(long, value_name = "N")]
        dp: Option<u32>,
    },
    /// Print the JSON Schema of the job spec
    Schema,
    /// List the starter templates, or print one
    ///
    /// A printed template starts with a `#:schema` line pointing at the edge's JSON Schema, so
    /// editors that read it (Taplo, Even Better TOML) complete and check the spec.
    Templates {
        /// A template id from the list
        id: Option<String>,
        #[command(flatten)]
        remote: Remote,
    },
    /// Sign in and save an API token (0600) for the remote commands
    ///
    /// The password comes from ONRAMP_PASSWORD, else the first line of stdin.
    Login {
        #[arg(long)]
        email: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Forget the saved token on this machine
    Logout,
    /// The account and its balance
    Me {
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// Check a spec here, then submit it once; rerun with the printed --key to retry safely
    Submit {
        /// The job spec (TOML, or JSON when it ends in .json), or - for stdin
        #[arg(value_name = "SPEC")]
        path: String,
        /// The Idempotency-Key of an earlier try (a fresh one otherwise)
        #[arg(long, value_name = "IDEMPOTENCY_KEY")]
        key: Option<String>,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// Your API tokens (id, when made, name), or revoke one
    Tokens {
        /// Revoke the token with this id: it signs nobody in any more
        #[arg(long, value_name = "ID")]
        revoke: Option<String>,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// A job's artifacts (name, size, sha256), or download or delete them
    Artifacts(ArtifactsArgs),
    /// Two or more runs side by side, your jobs or saved experiments: state, cards, cost and time, what each achieved, train loss at the steps all reported, and their specs diffed key by key
    Compare {
        /// The runs: a job's id (onramp jobs lists them), or an experiment as e/ID or its link
        #[arg(value_name = "RUN", value_parser = run_ref, num_args = 2.., required = true)]
        jobs: Vec<String>,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// What a job achieved: its eval set, base against trained (loss, perplexity, token accuracy), the measures at each evaluation, and the prompts both models answered
    Results {
        #[command(flatten)]
        job: Job,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// Your datasets: check one here before training on it, upload it, list and delete them
    #[command(subcommand)]
    Datasets(DatasetsAction),
    /// Your jobs, newest first
    Jobs {
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// One job: state, backend, cards, hold or charge, times, why it waits
    Status {
        #[command(flatten)]
        job: Job,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// A job's log from a byte offset; --follow keeps reading until the job ends
    Logs {
        #[command(flatten)]
        job: Job,
        /// Keep polling until the job has ended and its log is read to the end
        #[arg(long, short = 'f')]
        follow: bool,
        /// Start at this byte of the log
        #[arg(long, value_name = "BYTES", default_value_t = 0)]
        offset: u64,
        /// Print the log as the job wrote it, terminal control sequences included (by default they are shown escaped, so a job's output cannot drive your terminal)
        #[arg(long)]
        raw: bool,
        #[command(flatten)]
        remote: Remote,
    },
    /// Cancel a job; its hold settles to what it used
    Cancel {
        #[command(flatten)]
        job: Job,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// Print shell completions for bash, zsh, fish, elvish or PowerShell
    ///
    /// For example: onramp completions bash > ~/.local/share/bash-completion/completions/onramp
    Completions {
        /// The shell to write completions for
        #[arg(value_enum)]
        shell: Shell,
    },
}

#[derive(Debug, ClapArgs)]
#[command(group(clap::ArgGroup::new("patch").args(["fix", "deepspeed"])))]
pub struct PlanArgs {
    /// The job spec (TOML, or JSON when it ends in .json), or - for stdin
    #[arg(value_name = "SPEC")]
    pub path: String,
    /// The plan as JSON (the same shape the app reads)
    #[arg(long)]
    pub json: bool,
    /// Leave out the DeepSpeed JSON, the launch commands and the sbatch script
    #[arg(long)]
    pub no_artifacts: bool,
    /// Print the launch artifacts even when the spec has errors (by default only a plan without errors shows them)
    #[arg(long, conflicts_with = "no_artifacts")]
    pub artifacts: bool,
    /// Apply fix N (numbered as the plan lists them) to the spec, keeping its comments, and show the new plan
    #[arg(long, value_name = "N", conflicts_with_all = ["json", "trainer_run"])]
    pub fix: Option<usize>,
    /// Carry a DeepSpeed config (ds_config.json) into the spec: its batch, precision, ZeRO, offload, optimizer and schedule, "auto" left to the spec; lists what the job will not run as written
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "trainer_run", "fix"])]
    pub deepspeed: Option<String>,
    /// With --fix or --deepspeed: write the patched spec here instead of over SPEC (- for stdout)
    #[arg(short = 'o', long, value_name = "OUT", requires = "patch")]
    pub output: Option<String>,
    /// Add the formula and assumptions behind every figure
    #[arg(long)]
    pub explain: bool,
    /// Print the run onramp-train reads (onramp-run.json, its ds_config in it) instead of the plan
    #[arg(long, conflicts_with_all = ["json", "no_artifacts", "explain"])]
    pub trainer_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum DatasetsAction {
    /// Check a dataset here, offline: its format, every bad line with its number, and its examples and tokens as the trainer will count them
    ///
    /// Exits 1 when any line is bad or nothing in the file can be trained on.
    Check {
        /// The dataset (JSONL, a JSON array, or plain text), or - for stdin
        #[arg(value_name = "FILE")]
        path: String,
        /// The catalogue model whose tokenizer counts (its folder under ONRAMP_MODELS) and whose chat layout renders
        #[arg(long, value_name = "ID")]
        model: Option<String>,
        /// A Hugging Face tokenizer folder (tokenizer.json) to count with, instead of the model's
        #[arg(long, value_name = "DIR")]
        tokenizer: Option<std::path::PathBuf>,
        /// The sequence length examples are cut at and text is packed into
        #[arg(long, value_name = "N", default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..=1048576))]
        seq_len: u32,
        #[command(flatten)]
        json: Json,
    },
    /// Check a dataset, then upload it to your account in parts (a cut-off upload resumes); prints the id a spec names it by (data.dataset)
    Upload {
        /// The dataset file (JSONL, a JSON array, or plain text)
        #[arg(value_name = "FILE")]
        path: std::path::PathBuf,
        /// The catalogue model whose tokenizer counts (its folder under ONRAMP_MODELS) and whose chat layout renders
        #[arg(long, value_name = "ID")]
        model: Option<String>,
        /// A Hugging Face tokenizer folder (tokenizer.json) to count with, instead of the model's
        #[arg(long, value_name = "DIR")]
        tokenizer: Option<std::path::PathBuf>,
        /// The sequence length examples are cut at and text is packed into
        #[arg(long, value_name = "N", default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..=1048576))]
        seq_len: u32,
        /// Upload even when some lines are bad (the trainer skips them)
        #[arg(long)]
        skip_bad_lines: bool,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// Your uploaded datasets, newest first, and the quota they use
    List {
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
    /// Delete an uploaded dataset
    Rm {
        /// The dataset's id (ds_…, as onramp datasets list shows)
        #[arg(value_name = "ID")]
        id: String,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
}

/// `onramp artifacts JOB`, or one of its actions.
#[derive(Debug, ClapArgs)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ArtifactsArgs {
    #[command(subcommand)]
    pub action: Option<ArtifactsAction>,
    /// The job's id (onramp jobs lists them)
    #[arg(value_name = "JOB", value_parser = job_id, required = true)]
    pub job: Option<String>,
    #[command(flatten)]
    pub remote: Remote,
    #[command(flatten)]
    pub json: Json,
}

#[derive(Debug, Subcommand)]
pub enum ArtifactsAction {
    /// Download a job's artifacts, resuming one cut off and checking each file's sha256
    Download {
        #[command(flatten)]
        job: Job,
        /// The artifact's name (else every artifact of the job)
        #[arg(value_name = "NAME")]
        name: Option<String>,
        /// The folder to write into (else the current one)
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<std::path::PathBuf>,
        /// Replace files in DIR that differ from the artifacts of the same names (else such a
        /// file is kept and the download refused)
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        remote: Remote,
    },
    /// Delete one of a job's artifacts, freeing its bytes from your quota
    Delete {
        #[command(flatten)]
        job: Job,
        /// The artifact's name
        #[arg(value_name = "NAME")]
        name: String,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        json: Json,
    },
}

/// Where the edge is.
#[derive(Debug, Clone, ClapArgs)]
pub struct Remote {
    /// The edge's URL (else ONRAMP_EDGE, else the one you logged in to, else http://localhost:8787)
    #[arg(long, value_name = "URL")]
    pub edge: Option<String>,
}

#[derive(Debug, Clone, Copy, ClapArgs)]
pub struct Json {
    /// Print the edge's answer as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, ClapArgs)]
pub struct Job {
    /// The job's id (onramp jobs lists them)
    #[arg(value_name = "JOB", value_parser = job_id)]
    pub id: String,
}

/// A job id goes into a URL path: one non-empty segment.
fn job_id(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains(['/', '?', '#']) {
        Err(format!("`{s}` is not a job id"))
    } else {
        Ok(s.to_string())
    }
}

/// A run `onramp compare` reads: a job's id, or a saved experiment as `e/<id>` or its link
/// (`…/e/<id>`), kept as `e/<id>`.
fn run_ref(s: &str) -> Result<String, String> {
    let experiment = s.strip_prefix("e/").map(str::to_string).or_else(|| {
        let rest = s.split_once("://")?.1;
        let (_, path) = rest.split_once('/')?;
        let id = path.strip_prefix("e/")?;
        Some(id.split(['?', '#']).next().unwrap_or(id).to_string())
    });
    match experiment {
        Some(id)
            if !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            Ok(format!("e/{id}"))
        }
        Some(_) => Err(format!("`{s}` is not an experiment's link (e/ID)")),
        None => job_id(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn a_compared_run_is_a_job_or_an_experiment() {
        assert_eq!(run_ref("0123abcd").as_deref(), Ok("0123abcd"));
        assert_eq!(run_ref("e/x_Y-1").as_deref(), Ok("e/x_Y-1"));
        assert_eq!(
            run_ref("https://onramp.example/e/abc123?lang=zh").as_deref(),
            Ok("e/abc123")
        );
        for bad in [
            "e/",
            "e/../x",
            "https://onramp.example/e/a%2F",
            "a/b",
            "",
            "https://x/jobs/1",
        ] {
            assert!(run_ref(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn lang_is_global_and_accepts_zh_cn() {
        let cli = Cli::try_parse_from(["onramp", "plan", "x.toml", "--lang", "zh-CN"]).unwrap();
        assert_eq!(cli.lang, Some(LangArg::Zh));
        let cli = Cli::try_parse_from(["onramp", "--lang", "en", "jobs", "--json"]).unwrap();
        assert_eq!(cli.lang, Some(LangArg::En));
        assert!(matches!(
            cli.command,
            Command::Jobs {
                json: Json { json: true },
                ..
            }
        ));
    }

    #[test]
    fn usage_errors_are_clap_errors() {
        use clap::error::ErrorKind;
        let kind = |argv: &[&str]| Cli::try_parse_from(argv).unwrap_err().kind();
        assert_eq!(
            kind(&["onramp", "jobs", "--frob"]),
            ErrorKind::UnknownArgument
        );
        assert_eq!(
            kind(&["onramp", "logs", "j1", "--offset", "x"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["onramp", "status", "a/b"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["onramp", "plan"]),
            ErrorKind::MissingRequiredArgument
        );
        assert_eq!(kind(&["onramp", "plan", "--help"]), ErrorKind::DisplayHelp);
        assert_eq!(kind(&["onramp", "--version"]), ErrorKind::DisplayVersion);
    }
}
