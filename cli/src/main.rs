//! `onramp`: the terminal client. `onramp plan SPEC.toml` works offline through `jobspec`;
//! `login`, `submit`, `jobs`, `status`, `logs` and `cancel` talk to the edge with an API token.

mod args;
mod artifacts_cmd;
mod compare_cmd;
mod credentials;
mod datasets_cmd;
mod datasets_remote;
#[cfg(test)]
mod guide;
mod help_zh;
mod idle;
mod input;
mod jobs_cmd;
mod plan_cmd;
mod remote;
mod results_cmd;
mod say;
mod spec_counts;
mod tokens_cmd;
mod usage_zh;

use args::{Cli, Command, exit};
use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Usage errors, --help and --version are clap's: usage on stderr with exit 2, help and
    // version on stdout with exit 0.
    // The help speaks the run's language too, so the language is looked for before clap
    // parses: `--lang` as written (clap checks its value right after), else the locale.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let chinese = say::choose(lang_flag(&argv).as_deref()).is_ok_and(|l| l == say::Lang::Zh);
    let cmd = if chinese {
        help_zh::localize(Cli::command())
    } else {
        Cli::command()
    };
    let matches = match cmd.try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => usage_exit(e, chinese),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => usage_exit(e, chinese),
    };
    match run(cli.command) {
        Ok(code) => code,
        // What is left is the machine's: a file, stdin or the saved sign-in could not be read.
        Err(msg) => {
            eprintln!("onramp: {msg}");
            ExitCode::from(exit::IO)
        }
    }
}

/// clap's answer to the command line: help and version on stdout (exit 0), a usage error on
/// stderr (exit 2), in Chinese when the run is.
fn usage_exit(e: clap::Error, chinese: bool) -> ! {
    if chinese && e.use_stderr() {
        eprint!("{}", usage_zh::translate(&e.render().to_string()));
        std::process::exit(e.exit_code());
    }
    e.exit()
}

/// The value of `--lang VALUE` or `--lang=VALUE` on the command line, if any (before `--`).
/// `--lang` is global and may be given more than once; as for clap, the last one counts.
fn lang_flag(argv: &[std::ffi::OsString]) -> Option<String> {
    let args: Vec<&str> = argv.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let mut it = args.iter().take_while(|a| **a != "--");
    let mut found = None;
    while let Some(a) = it.next() {
        if *a == "--lang" {
            found = it.next().map(|v| v.to_string());
        } else if let Some(v) = a.strip_prefix("--lang=") {
            found = Some(v.to_string());
        }
    }
    found
}

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Plan(a) => plan_cmd::run(&a),
        Command::DsCheck { path, dp } => ds_check(&path, dp),
        Command::Schema => {
            println!("{}", jobspec::schema::json_schema_text());
            Ok(ExitCode::SUCCESS)
        }
        Command::Templates { id, remote } => templates(id.as_deref(), remote.edge.as_deref()),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "onramp", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Login { email, remote } => jobs_cmd::login(jobs_cmd::Args {
            edge: remote.edge,
            email: Some(email),
            ..Default::default()
        }),
        Command::Logout => jobs_cmd::logout(jobs_cmd::Args::default()),
        Command::Me { remote, json } => jobs_cmd::me(jobs_cmd::Args {
            edge: remote.edge,
            json: json.json,
            ..Default::default()
        }),
        Command::Submit {
            path,
            key,
            remote,
            json,
        } => jobs_cmd::submit(jobs_cmd::Args {
            edge: remote.edge,
            json: json.json,
            key,
            positional: vec![path],
            ..Default::default()
        }),
        Command::Tokens {
            revoke,
            remote,
            json,
        } => tokens_cmd::run(revoke, remote, json),
        Command::Artifacts(a) => artifacts_cmd::run(a),
        Command::Compare { jobs, remote, json } => compare_cmd::run(&jobs, remote.edge, json.json),
        Command::Results { job, remote, json } => results_cmd::run(&job.id, remote.edge, json.json),
        Command::Datasets(a) => datasets_remote::run(a),
        Command::Jobs { remote, json } => jobs_cmd::jobs(jobs_cmd::Args {
            edge: remote.edge,
            json: json.json,
            ..Default::default()
        }),
        Command::Status { job, remote, json } => jobs_cmd::status(jobs_cmd::Args {
            edge: remote.edge,
            json: json.json,
            positional: vec![job.id],
            ..Default::default()
        }),
        Command::Logs {
            job,
            follow,
            offset,
            raw,
            remote,
        } => jobs_cmd::logs(jobs_cmd::Args {
            edge: remote.edge,
            follow,
            offset,
            raw,
            positional: vec![job.id],
            ..Default::default()
        }),
        Command::Cancel { job, remote, json } => jobs_cmd::cancel(jobs_cmd::Args {
            edge: remote.edge,
            json: json.json,
            positional: vec![job.id],
            ..Default::default()
        }),
    }
}

fn ds_check(path: &str, dp: Option<u32>) -> Result<ExitCode, String> {
    let (import, diags) = jobspec::deepspeed::import_ds_config(&input::read(path)?, dp);
    print!(
        "{}",
        jobspec::report::render_diagnostics(&diags, say::lang(), path)
    );
    match import {
        Some(i) => {
            println!("{}", ds_summary(&i));
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(exit::REFUSED)),
    }
}

/// What an approved ds_config says, in a line; what it leaves to the spec ("auto") says so.
fn ds_summary(i: &jobspec::deepspeed::DsImport) -> String {
    let zh = say::lang() == say::Lang::Zh;
    let auto = |v: Option<u64>| v.map_or_else(|| "auto".to_string(), |n| n.to_string());
    let precision = i.precision.map_or("auto", |p| p.as_str());
    let (batch, micro, accum) = (
        auto(i.train_batch_size),
        auto(i.micro_batch),
        auto(i.grad_accum),
    );
    let (stage, opt, params) = (
        i.zero_stage,
        i.offload_optimizer.as_str(),
        i.offload_params.as_str(),
    );
    if zh {
        format!(
            "通过：train_batch_size {batch}，micro batch {micro}，梯度累积 {accum}，精度 {precision}，ZeRO-{stage}，优化器状态卸载 {opt}，参数卸载 {params}"
        )
    } else {
        format!(
            "ok: train_batch_size {batch}, micro batch {micro}, accumulation {accum}, precision {precision}, ZeRO-{stage}, offload optimizer {opt}, params {params}"
        )
    }
}

fn templates(id: Option<&str>, edge: Option<&str>) -> Result<ExitCode, String> {
    match id {
        None => {
            let zh = say::lang() == say::Lang::Zh;
            let ids: Vec<&str> = jobspec::templates().iter().map(|t| t.id).collect();
            let width = ids.iter().map(|i| i.len()).max().unwrap_or(0);
            for t in jobspec::templates() {
                let title = if zh { t.title_zh } else { t.title_en };
                println!("{:<width$}  {title}", t.id);
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(id) => match jobspec::templates::template(id) {
            Some(t) => {
                // The schema line names the edge the user works with, found as for the remote
                // commands (the saved sign-in's token plays no part here).
                let edge = jobs_cmd::edge_url(edge)?;
                print!("{}", t.toml_in(&edge, say::lang()));
                Ok(ExitCode::SUCCESS)
            }
            None => {
                let known = jobspec::templates()
                    .iter()
                    .map(|t| t.id)
                    .collect::<Vec<_>>()
                    .join(", ");
                let chinese = say::lang() == say::Lang::Zh;
                let msg = say::t(
                    format!("no template `{id}`; the templates are {known}"),
                    format!("没有模板 `{id}`；可用的模板有 {known}"),
                );
                let mut cmd = if chinese {
                    help_zh::localize(Cli::command())
                } else {
                    Cli::command()
                };
                usage_exit(
                    cmd.error(clap::error::ErrorKind::InvalidValue, msg),
                    chinese,
                )
            }
        },
    }
}
