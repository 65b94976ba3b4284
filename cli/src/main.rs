//! `onramp`: the terminal client. `onramp plan SPEC.toml` works offline through `jobspec`;
//! `login`, `submit`, `jobs`, `status`, `logs` and `cancel` talk to the edge with an API token.

mod credentials;
mod jobs_cmd;
mod remote;
mod say;

use std::process::ExitCode;

const USAGE: &str = "\
usage:
  onramp plan SPEC.toml|SPEC.json [--json] [--lang en|zh] [--no-artifacts] [--explain]
      diagnostics, memory per card, time and cost, every card type, fixes and launch artifacts;
      exits 1 when the spec has errors (including: does not fit, cannot finish);
      --explain adds the formula and assumptions behind every figure
  onramp ds-check ds_config.json [--dp N]
      check a DeepSpeed config with DeepSpeed's own batch and offload rules
  onramp schema
      print the JSON Schema of the job spec
  onramp templates
      list the starter templates (onramp templates ID prints one)

against the edge (--edge URL, else ONRAMP_EDGE, else the one you logged in to, else
http://localhost:8787; ONRAMP_TOKEN overrides the saved token; --lang en|zh, else the locale):
  onramp login --email EMAIL
      password from ONRAMP_PASSWORD or stdin; saves an API token (0600) for the commands below
  onramp logout
      forget the saved token on this machine
  onramp me [--json]
      the account and its balance
  onramp submit SPEC.toml|SPEC.json [--key IDEMPOTENCY_KEY] [--json]
      check the spec here, then submit it once; rerun with the printed --key to retry safely
  onramp jobs [--json]
      your jobs, newest first
  onramp status JOB [--json]
  onramp logs JOB [--follow] [--offset BYTES]
  onramp cancel JOB [--json]
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("onramp: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let Some((cmd, rest)) = args.split_first() else {
        return Err("no command".into());
    };
    match cmd.as_str() {
        "plan" => plan(rest),
        "ds-check" => ds_check(rest),
        "schema" => {
            println!("{}", jobspec::schema::json_schema_text());
            Ok(ExitCode::SUCCESS)
        }
        "templates" => templates(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        "login" => jobs_cmd::login(rest),
        "logout" => jobs_cmd::logout(rest),
        "me" => jobs_cmd::me(rest),
        "submit" => jobs_cmd::submit(rest),
        "jobs" => jobs_cmd::jobs(rest),
        "status" => jobs_cmd::status(rest),
        "logs" => jobs_cmd::logs(rest),
        "cancel" => jobs_cmd::cancel(rest),
        other => Err(format!("unknown command `{other}`")),
    }
}

struct PlanArgs {
    path: String,
    json: bool,
    lang: jobspec::Lang,
    artifacts: bool,
    explain: bool,
}

fn plan_args(rest: &[String]) -> Result<PlanArgs, String> {
    let mut out = PlanArgs {
        path: String::new(),
        json: false,
        lang: jobspec::Lang::En,
        artifacts: true,
        explain: false,
    };
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => out.json = true,
            "--no-artifacts" => out.artifacts = false,
            "--explain" => out.explain = true,
            "--lang" => {
                out.lang = match it.next().map(String::as_str) {
                    Some("en") => jobspec::Lang::En,
                    Some("zh" | "zh-CN" | "zh-cn") => jobspec::Lang::ZhCn,
                    other => return Err(format!("--lang takes en or zh, not {other:?}")),
                }
            }
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
            path if out.path.is_empty() => out.path = path.to_string(),
            extra => return Err(format!("unexpected argument `{extra}`")),
        }
    }
    if out.path.is_empty() {
        return Err("plan needs a spec file".into());
    }
    Ok(out)
}

fn read(path: &str) -> Result<String, String> {
    if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))
}

fn plan(rest: &[String]) -> Result<ExitCode, String> {
    let args = plan_args(rest)?;
    let src = read(&args.path)?;
    let format = if args.path.ends_with(".json") {
        jobspec::Format::Json
    } else {
        jobspec::Format::Toml
    };
    let plan = jobspec::plan_text(&src, format);
    if args.json {
        let wire = jobspec::PlanWire::from(&plan);
        let text =
            serde_json::to_string_pretty(&wire).map_err(|e| format!("cannot write JSON: {e}"))?;
        println!("{text}");
    } else {
        print!(
            "{}",
            jobspec::report::render_text_for(&plan, args.lang, args.artifacts, &args.path)
        );
        if args.explain {
            print!("\n{}", jobspec::report::render_explain(&plan, args.lang));
        }
    }
    Ok(if plan.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn ds_check(rest: &[String]) -> Result<ExitCode, String> {
    let mut path = None;
    let mut dp = None;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dp" => {
                dp = Some(
                    it.next()
                        .and_then(|n| n.parse::<u32>().ok())
                        .ok_or("--dp takes a number")?,
                )
            }
            p if path.is_none() => path = Some(p.to_string()),
            extra => return Err(format!("unexpected argument `{extra}`")),
        }
    }
    let path = path.ok_or("ds-check needs a ds_config.json")?;
    let (import, diags) = jobspec::deepspeed::import_ds_config(&read(&path)?, dp);
    for d in &diags {
        println!(
            "{path}: {}[{}] {}: {}",
            d.severity.as_str(),
            d.code.as_str(),
            d.path,
            d.message.en
        );
    }
    match import {
        Some(i) => {
            println!(
                "ok: train_batch_size {:?}, micro batch {:?}, accumulation {:?}, ZeRO-{}, offload optimizer {}, params {}",
                i.train_batch_size,
                i.micro_batch,
                i.grad_accum,
                i.zero_stage,
                i.offload_optimizer.as_str(),
                i.offload_params.as_str()
            );
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(1)),
    }
}

fn templates(rest: &[String]) -> Result<ExitCode, String> {
    match rest.first() {
        None => {
            for t in jobspec::templates() {
                println!("{:<28} {}", t.id, t.title_en);
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(id) => match jobspec::templates::template(id) {
            Some(t) => {
                print!("{}", t.toml);
                Ok(ExitCode::SUCCESS)
            }
            None => Err(format!("no template `{id}`")),
        },
    }
}
