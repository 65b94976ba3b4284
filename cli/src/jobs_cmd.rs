//! The commands that talk to the edge: `login`, `logout`, `me`, `submit`, `jobs`, `status`,
//! `logs` and `cancel`. Each takes its parsed arguments, makes its calls through [`Edge`], and
//! prints for people (or JSON with `--json`); a refusal is the edge's own message, exit code 1.

use crate::credentials::{self, Saved};
use crate::remote::{DEFAULT_EDGE, Edge, Failure};
use crate::say::{self, t};
use api::{Account, Job, JobList, JobState, LogChunk, TokenCreated};
use jobspec::yuan;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::time::Duration;

/// The options of the remote commands, as `main` fills them in from the parsed command line.
#[derive(Debug, Default, PartialEq)]
pub struct Args {
    pub edge: Option<String>,
    pub json: bool,
    pub follow: bool,
    pub email: Option<String>,
    pub key: Option<String>,
    pub offset: u64,
    /// `onramp logs --raw`: the log's bytes as they are, control sequences included.
    pub raw: bool,
    pub positional: Vec<String>,
}

/// The edge to talk to and the token to use: `--edge`, then `ONRAMP_EDGE`, then the saved
/// sign-in's edge, then the local default; the token from `ONRAMP_TOKEN`, else the saved one when
/// it belongs to that same edge (a token is never sent to another edge).
pub fn resolve(
    flag: Option<&str>,
    env_edge: Option<&str>,
    env_token: Option<&str>,
    saved: Option<&Saved>,
) -> Edge {
    let base = flag
        .or(env_edge)
        .or(saved.map(|s| s.edge.as_str()))
        .unwrap_or(DEFAULT_EDGE)
        .trim_end_matches('/')
        .to_string();
    let token = env_token.map(String::from).or_else(|| {
        saved
            .filter(|s| s.edge.trim_end_matches('/') == base)
            .map(|s| s.token.clone())
    });
    Edge::new(&base, token)
}

/// The edge's base URL as the remote commands find it (`--edge`, `ONRAMP_EDGE`, the saved
/// sign-in, the local default).
pub fn edge_url(flag: Option<&str>) -> Result<String, String> {
    let args = Args {
        edge: flag.map(String::from),
        ..Default::default()
    };
    Ok(edge_for(&args)?.base)
}

pub(crate) fn edge_for(args: &Args) -> Result<Edge, String> {
    let saved = match credentials::path() {
        Some(p) => credentials::load(&p)?,
        None => None,
    };
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    Ok(resolve(
        args.edge.as_deref(),
        env("ONRAMP_EDGE").as_deref(),
        env("ONRAMP_TOKEN").as_deref(),
        saved.as_ref(),
    ))
}

/// One line of `onramp jobs`.
pub fn job_line(j: &Job) -> String {
    let money = match j.charged_fen {
        Some(c) => t(format!("charged {}", yuan(c)), format!("实扣 {}", yuan(c))),
        None => {
            let h = yuan(j.hold_fen);
            t(format!("hold {h}"), format!("预扣 {h}"))
        }
    };
    format!(
        "{:<24} {:<10} {:<8} {}×{:<10} {} {}  {}",
        j.id,
        j.state.as_str(),
        j.backend,
        j.cards,
        j.card,
        say::pad(&money, 16),
        j.created_at,
        j.name,
    )
}

/// `onramp status`: every field people ask about, in a fixed order, skipping absent ones.
pub fn job_details(j: &Job) -> String {
    let mut out = String::new();
    // Labels in the run's language; values as the edge gives them.
    let label = |k: &str| match say::lang() {
        say::Lang::En => k.trim_end_matches("_at").to_string(),
        say::Lang::Zh => match k {
            "id" => "编号",
            "name" => "名称",
            "state" => "状态",
            "backend" => "后端",
            "card" => "显卡",
            "cards" => "卡数",
            "hold" => "预扣",
            "charged" => "实扣",
            "created_at" => "创建",
            "started_at" => "开始",
            "ended_at" => "结束",
            "reason" => "原因",
            "message" => "说明",
            _ => "检查点",
        }
        .to_string(),
    };
    let mut line = |k: &str, v: String| out.push_str(&format!("{} {v}\n", say::pad(&label(k), 10)));
    for (k, v) in [
        ("id", &j.id),
        ("name", &j.name),
        ("state", &j.state.as_str().to_string()),
        ("backend", &j.backend),
        ("card", &j.card),
    ] {
        line(k, v.clone());
    }
    line("cards", j.cards.to_string());
    line("hold", yuan(j.hold_fen));
    if let Some(c) = j.charged_fen {
        line("charged", yuan(c));
    }
    let reason = match say::lang() {
        say::Lang::Zh => j
            .reason_messages
            .as_ref()
            .map(|m| m.zh_cn.clone())
            .or(j.reason.clone()),
        say::Lang::En => j.reason.clone(),
    };
    for (k, v) in [
        ("created_at", Some(j.created_at.clone())),
        ("started_at", j.started_at.clone()),
        ("ended_at", j.ended_at.clone()),
        ("reason", reason),
        ("message", j.message.clone()),
    ] {
        if let Some(v) = v {
            line(k, v);
        }
    }
    if j.checkpoint {
        line(
            "checkpoint",
            t(
                "yes (open it in the playground)".into(),
                "有（可在试玩页打开）".into(),
            ),
        );
    }
    out
}

pub(crate) fn done(r: Result<(), Failure>) -> Result<ExitCode, String> {
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(Failure(msg)) => {
            eprintln!("onramp: {msg}");
            Ok(ExitCode::from(1))
        }
    }
}

pub(crate) fn print_value(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}

/// `onramp login --email E`: the password comes from `ONRAMP_PASSWORD` or the first line of
/// stdin. A session is opened only to mint an API token, then closed; the token is saved.
pub fn login(args: Args) -> Result<ExitCode, String> {
    let email = args.email.clone().ok_or("login needs --email")?;
    let password = match std::env::var("ONRAMP_PASSWORD") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
            line.trim_end_matches(['\r', '\n']).to_string()
        }
    };
    let mut edge = edge_for(&args)?;
    edge.token = None;
    done((|| {
        let a = edge.post_json(
            "/api/auth/login",
            &json!({"email": email, "password": password}),
        )?;
        if !a.ok() {
            return Err(crate::remote::describe_error(&a));
        }
        edge.session = a.session;
        if edge.session.is_none() {
            return Err(Failure(t(
                "the edge signed you in but set no session".into(),
                "边缘服务已登录，但没有返回会话".into(),
            )));
        }
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "a terminal".into());
        let minted = edge.expect_ok(edge.post_json(
            "/api/tokens",
            &json!({"name": format!("onramp cli on {host}")}),
        ))?;
        let token = Edge::typed::<TokenCreated>(&minted)?.token;
        // The token is what the CLI keeps; the session was only the way to mint it.
        let _ = edge.post_json("/api/auth/logout", &json!({}));
        let path = credentials::path()
            .ok_or_else(|| Failure("no HOME or ONRAMP_CONFIG_DIR to save the token in".into()))?;
        credentials::save(
            &path,
            &Saved {
                edge: edge.base.clone(),
                email: email.clone(),
                token,
            },
        )
        .map_err(Failure)?;
        let (base, p) = (&edge.base, path.display());
        println!(
            "{}",
            t(
                format!("signed in to {base} as {email}; token saved in {p}"),
                format!("已以 {email} 登录 {base}；令牌保存在 {p}"),
            )
        );
        Ok(())
    })())
}

/// `onramp logout`: forgets the saved token on this machine.
pub fn logout(_args: Args) -> Result<ExitCode, String> {
    let path = credentials::path().ok_or("no HOME or ONRAMP_CONFIG_DIR")?;
    if credentials::forget(&path)? {
        let p = path.display();
        println!(
            "{}",
            t(
                format!("signed out: removed {p}"),
                format!("已退出：删除了 {p}")
            )
        );
    } else {
        println!(
            "{}",
            t(
                "not signed in on this machine".into(),
                "本机尚未登录".into()
            )
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `onramp me`: who the token belongs to and the balance.
pub fn me(args: Args) -> Result<ExitCode, String> {
    let edge = edge_for(&args)?;
    done(edge.expect_ok(edge.get("/api/me")).and_then(|m| {
        if args.json {
            print_value(&m);
        } else {
            let me = Edge::typed::<Account>(&m)?;
            let (email, b) = (&me.email, yuan(me.balance_fen));
            println!(
                "{}",
                t(
                    format!("{email} on {}: balance {b}", edge.base),
                    format!("{email}（{}）：余额 {b}", edge.base),
                )
            );
            if !me.email_verified {
                println!(
                    "{}",
                    t(
                        "the email is not verified yet: open the link we mailed to get the trial credit".into(),
                        "邮箱尚未验证：打开我们发送的邮件中的链接即可领取试用额度".into(),
                    )
                );
            }
        }
        Ok(())
    }))
}

/// A fresh Idempotency-Key: 128 random bits from the OS.
fn fresh_key() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").map_err(|e| format!("no randomness: {e}"))?,
        &mut bytes,
    )
    .map_err(|e| format!("no randomness: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `onramp submit SPEC [--key K]`: checks the spec here first (the same jobspec the edge runs),
/// then submits it once; the key printed lets a retry after a lost answer get the same job.
pub fn submit(args: Args) -> Result<ExitCode, String> {
    let [path] = args.positional.as_slice() else {
        return Err("submit needs exactly one spec file".into());
    };
    let text = crate::input::read(path)?;
    let json_spec = path.ends_with(".json");
    let (text, json_spec) =
        crate::spec_counts::with_dataset_counts(|| edge_for(&args), text, json_spec)?;
    let plan = jobspec::plan_text(
        &text,
        if json_spec {
            jobspec::Format::Json
        } else {
            jobspec::Format::Toml
        },
    );
    if !plan.is_submittable() {
        eprint!(
            "{}",
            jobspec::report::render_text_for(&plan, say::lang(), false, path)
        );
        eprintln!(
            "onramp: {}",
            t(
                format!("{path} cannot be submitted; nothing was sent"),
                format!("{path} 不能提交；什么也没有发送"),
            )
        );
        return Ok(ExitCode::from(1));
    }
    let key = match &args.key {
        Some(k) => k.clone(),
        None => fresh_key()?,
    };
    let edge = edge_for(&args)?;
    let content_type = if json_spec {
        "application/json"
    } else {
        "application/toml"
    };
    let answer = edge.call(
        "POST",
        "/api/jobs",
        Some(text.into_bytes()),
        &[("content-type", content_type), ("idempotency-key", &key)],
    );
    done(edge.expect_ok(answer).and_then(|v| {
        if args.json {
            print_value(&v);
            return Ok(());
        }
        let j = Edge::typed::<Job>(&v)?;
        let id = &j.id;
        let (state, backend, hold) = (j.state.as_str(), &j.backend, yuan(j.hold_fen));
        let base = &edge.base;
        println!(
            "{}",
            t(
                format!(
                    "job {id} {state} on {backend}: holding {hold} (idempotency key {key})\n  follow it: onramp logs {id} --follow   or open {base}/jobs/{id}"
                ),
                format!(
                    "job {id} {state}，后端 {backend}：预扣 {hold}（幂等键 {key}）\n  跟踪：onramp logs {id} --follow   或打开 {base}/jobs/{id}"
                ),
            )
        );
        Ok(())
    }))
}

/// `onramp jobs`: the caller's jobs, newest first.
pub fn jobs(args: Args) -> Result<ExitCode, String> {
    let edge = edge_for(&args)?;
    done(edge.expect_ok(edge.get("/api/jobs")).and_then(|v| {
        if args.json {
            print_value(&v);
            return Ok(());
        }
        let list = Edge::typed::<JobList>(&v)?.jobs;
        if list.is_empty() {
            println!(
                "{}",
                t(
                    "no jobs yet: onramp submit SPEC.toml".into(),
                    "还没有作业：onramp submit SPEC.toml".into(),
                )
            );
        }
        for j in &list {
            println!("{}", job_line(j));
        }
        Ok(())
    }))
}

fn one_id(args: &Args, what: &str) -> Result<String, String> {
    match args.positional.as_slice() {
        [id] if !id.is_empty() && !id.contains('/') => Ok(id.clone()),
        [id] => Err(format!("`{id}` is not a job id")),
        _ => Err(format!("{what} needs exactly one job id")),
    }
}

/// `onramp status ID`.
pub fn status(args: Args) -> Result<ExitCode, String> {
    let id = one_id(&args, "status")?;
    let edge = edge_for(&args)?;
    done(
        edge.expect_ok(edge.get(&format!("/api/jobs/{id}")))
            .and_then(|v| {
                if args.json {
                    print_value(&v);
                } else {
                    print!("{}", job_details(&Edge::typed::<Job>(&v)?));
                }
                Ok(())
            }),
    )
}

/// `onramp cancel ID`.
pub fn cancel(args: Args) -> Result<ExitCode, String> {
    let id = one_id(&args, "cancel")?;
    let edge = edge_for(&args)?;
    let answer = edge.post_json(&format!("/api/jobs/{id}/cancel"), &json!({}));
    done(edge.expect_ok(answer).and_then(|v| {
        if args.json {
            print_value(&v);
        } else {
            let j = Edge::typed::<Job>(&v)?;
            let (state, c) = (j.state.as_str(), yuan(j.charged_fen.unwrap_or(0)));
            println!(
                "{}",
                t(
                    format!("job {id} {state}; charged {c}"),
                    format!("job {id} {state}；实扣 {c}"),
                )
            );
        }
        Ok(())
    }))
}

/// A log's text for the terminal: control sequences made visible unless `--raw`.
fn shown(text: &str, raw: bool) -> std::borrow::Cow<'_, str> {
    if raw {
        text.into()
    } else {
        crate::say::terminal_safe(text).into()
    }
}

/// `onramp logs ID [--follow] [--offset N] [--raw]`: prints the log from a byte offset (its
/// control sequences made visible, unless `--raw`); with `--follow` keeps polling until the job
/// has ended and its log is read to the end.
pub fn logs(args: Args) -> Result<ExitCode, String> {
    let id = one_id(&args, "logs")?;
    let edge = edge_for(&args)?;
    let mut offset = args.offset;
    done((|| {
        loop {
            let chunk: LogChunk = Edge::typed(
                &edge.expect_ok(edge.get(&format!("/api/jobs/{id}/logs?offset={offset}")))?,
            )?;
            print!("{}", shown(&chunk.text, args.raw));
            use std::io::Write;
            let _ = std::io::stdout().flush();
            offset = chunk.next_offset;
            let at_end = chunk.eof;
            if !args.follow {
                return Ok(());
            }
            if at_end {
                let job: Job = Edge::typed(&edge.expect_ok(edge.get(&format!("/api/jobs/{id}")))?)?;
                let state: JobState = job.state;
                if state.is_terminal() {
                    // One last read: the job may have written between the two calls.
                    let last: LogChunk = Edge::typed(
                        &edge
                            .expect_ok(edge.get(&format!("/api/jobs/{id}/logs?offset={offset}")))?,
                    )?;
                    print!("{}", shown(&last.text, args.raw));
                    eprintln!(
                        "onramp: {}",
                        t(
                            format!("job {id} {}", state.as_str()),
                            format!("job {id} 已结束：{}", state.as_str())
                        )
                    );
                    return Ok(());
                }
                // Following a live job means asking again; once a second keeps the edge calm.
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_token_is_only_sent_to_its_own_edge() {
        let saved = Saved {
            edge: "http://a:1".into(),
            email: "x@y.z".into(),
            token: "onr_saved".into(),
        };
        let e = resolve(None, None, None, Some(&saved));
        assert_eq!(
            (e.base.as_str(), e.token.as_deref()),
            ("http://a:1", Some("onr_saved"))
        );
        let e = resolve(Some("http://b:2/"), None, None, Some(&saved));
        assert_eq!((e.base.as_str(), e.token), ("http://b:2", None));
        let e = resolve(None, Some("http://b:2"), Some("onr_env"), Some(&saved));
        assert_eq!(
            (e.base.as_str(), e.token.as_deref()),
            ("http://b:2", Some("onr_env"))
        );
        let e = resolve(None, None, None, None);
        assert_eq!((e.base.as_str(), e.token), (DEFAULT_EDGE, None));
    }

    #[test]
    fn money_reads_as_yuan() {
        // The app's and jobspec's formatter: thousands grouped, and the minus sign the app
        // shows (this printed `-¥0.05` and `¥1234.56` before there was one formatter).
        assert_eq!(yuan(0i64), "¥0.00");
        assert_eq!(yuan(1234i64), "¥12.34");
        assert_eq!(yuan(123_456i64), "¥1,234.56");
        assert_eq!(yuan(-5i64), "\u{2212}¥0.05");
    }

    #[test]
    fn jobs_print_charged_once_settled_and_hold_before() {
        let j = json!({"id": "j1", "state": "running", "backend": "local", "card": "cpu",
                       "cards": 1, "hold_fen": 120, "created_at": "2026-11-29T10:00:00Z", "name": "tiny",
                       "charged_fen": null, "started_at": null, "ended_at": null, "message": null,
                       "checkpoint": false, "spec": ""});
        let typed = |v: &Value| Edge::typed::<Job>(v).unwrap_or_else(|e| panic!("{}", e.0));
        let line = job_line(&typed(&j));
        assert!(
            line.contains("hold ¥1.20") && line.contains("1×cpu"),
            "{line}"
        );
        let mut done = j.clone();
        done["state"] = json!("succeeded");
        done["charged_fen"] = json!(7);
        assert!(job_line(&typed(&done)).contains("charged ¥0.07"));
        let d = job_details(&typed(&done));
        assert!(d.contains("state      succeeded\n"), "{d}");
        assert!(d.contains("charged    ¥0.07\n"), "{d}");
        assert!(!d.contains("ended"), "{d}");
    }
}
