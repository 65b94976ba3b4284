//! Job states and the pure decisions about jobs: which transitions are allowed, which backend
//! takes a spec, and what a job's wire form shows.

use crate::backends::config::{BackendConfig, BackendKind};
use crate::error::{ApiError, ErrorCode};

pub use api::JobState;

/// The backend for a spec: one that has enough cards of its type, of the preferred kind if the
/// spec names one. The first fitting backend in configuration order wins.
pub fn pick_backend<'a>(
    backends: impl IntoIterator<Item = &'a BackendConfig>,
    card: &str,
    cards_needed: u32,
    preference: &jobspec::spec::Backend,
) -> Result<&'a BackendConfig, ApiError> {
    use jobspec::spec::Backend as Pref;
    let kind_ok = |b: &BackendConfig| match preference {
        Pref::Auto => true,
        Pref::Runner => b.kind == BackendKind::Runner,
        Pref::Slurm => b.kind == BackendKind::Slurm,
    };
    backends
        .into_iter()
        .filter(|b| kind_ok(b))
        .find(|b| b.cards.get(card).is_some_and(|n| *n >= cards_needed))
        .ok_or_else(|| {
            ApiError::new(ErrorCode::NoBackend,
                format!("no configured backend offers {cards_needed} × {card} for backend = {preference:?}"),
            )
            .with_details(serde_json::json!({"card": card, "cards": cards_needed}))
        })
}

/// Which backends run a job for the spec's time limit (the local runner a week at most: a
/// longer job goes elsewhere), or the refusal when only the runner has its cards.
fn runs_long(
    backends: &[BackendConfig],
    v: &jobspec::ValidSpec,
) -> Result<impl Fn(&&BackendConfig) -> bool + Copy, ApiError> {
    let (card, n, pref) = (v.card().id, v.world_size(), &v.spec().backend);
    let long = v.time_limit_s() > jobspec::duration::RUNNER_MAX_TIME_LIMIT_S;
    let runs_long = move |b: &&BackendConfig| !(long && b.kind == BackendKind::Runner);
    if long
        && pick_backend(backends.iter().filter(runs_long), card, n, pref).is_err()
        && pick_backend(backends, card, n, pref).is_ok()
    {
        return Err(ApiError::new(
            ErrorCode::NoBackend,
            format!(
                "time_limit is over the {} days the local runner runs a job, and no other backend offers {n} × {card}: shorten it",
                jobspec::duration::RUNNER_MAX_TIME_LIMIT_S / 86_400
            ),
        )
        .with_field("resources.time_limit"));
    }
    Ok(runs_long)
}

/// The backend for a valid spec, and the spec as planned on that backend's nodes: as
/// [`pick_backend`], among the backends whose nodes hold what the spec offloads (a backend's
/// `node_ram_gib` and `node_nvme_gib` over the catalogue's figures). When the offload fits none of
/// the backends that have the cards, the refusal is the plan's own finding on the first of them
/// (`host-does-not-fit`, how much more RAM or NVMe it needs), a 422 like any spec that does not fit.
pub fn pick_for_spec<'a>(
    backends: &'a [BackendConfig],
    v: &jobspec::ValidSpec,
) -> Result<(&'a BackendConfig, jobspec::ValidSpec), ApiError> {
    let (card, n, pref) = (v.card().id, v.world_size(), &v.spec().backend);
    let runs_long = runs_long(backends, v)?;
    // A model that runs its repo's code goes only where the operator allows it.
    let runs_model: Vec<&BackendConfig> = backends
        .iter()
        .filter(runs_long)
        .filter(|b| b.runs_model(v))
        .collect();
    if let Some(m) = crate::backends::config::remote_code_model(v)
        && pick_backend(runs_model.iter().copied(), card, n, pref).is_err()
        && pick_backend(backends.iter().filter(runs_long), card, n, pref).is_ok()
    {
        return Err(ApiError::new(
            ErrorCode::NoBackend,
            format!(
                "model {} loads only by running code from its repository ({}, trust_remote_code), and no backend with {n} × {card} allows it; the operator adds \"{}\" to a backend's trust_remote_code, or choose another model",
                m.id, m.hf_repo, m.id
            ),
        )
        .with_field("model"));
    }
    // Benchmarks go only where their data is.
    let allowed: Vec<&BackendConfig> = runs_model
        .iter()
        .copied()
        .filter(|b| b.holds_tasks(v))
        .collect();
    if pick_backend(allowed.iter().copied(), card, n, pref).is_err() {
        let with_cards: Vec<&BackendConfig> = runs_model
            .iter()
            .copied()
            .filter(|b| pick_backend([*b], card, n, pref).is_ok())
            .collect();
        if !with_cards.is_empty() {
            return Err(tasks_refused(v, &with_cards));
        }
    }
    let on = |b: &BackendConfig| v.clone().with_node(b.node());
    let host_errors = |spec: jobspec::ValidSpec| {
        let plan = jobspec::plan::finish(Some(spec), Vec::new());
        let errors: Vec<jobspec::Diagnostic> = plan
            .diagnostics
            .into_iter()
            .filter(|d| d.is_error() && d.code == jobspec::Code::HostDoesNotFit)
            .collect();
        errors
    };
    // The estimate alone says whether it fits; the whole plan only for a refusal's words.
    let fitting = allowed
        .iter()
        .copied()
        .filter(|b| jobspec::estimate(&on(b)).memory.host_fits);
    match pick_backend(fitting, card, n, pref) {
        Ok(b) => Ok((b, on(b))),
        Err(e) => match pick_backend(allowed.iter().copied(), card, n, pref) {
            Ok(b) => Err(ApiError::new(
                ErrorCode::InvalidSpec,
                format!(
                    "the spec cannot be submitted: what it offloads does not fit the nodes of backend {}; see details.diagnostics",
                    b.name
                ),
            )
            .with_typed_details(&api::InvalidSpecDetails {
                diagnostics: host_errors(on(b)).iter().map(Into::into).collect(),
            })),
            Err(_) => Err(e),
        },
    }
}

/// The refusal of a spec whose benchmark tasks (`eval.tasks`) no backend with its cards holds
/// the data of: a 422 with the diagnostic at `eval.tasks`, naming the tasks missing and those
/// the backends can score.
fn tasks_refused(v: &jobspec::ValidSpec, with_cards: &[&BackendConfig]) -> ApiError {
    let (card, n) = (v.card().id, v.world_size());
    let mut held: Vec<&str> = with_cards
        .iter()
        .flat_map(|b| b.eval_tasks.iter().map(String::as_str))
        .collect();
    held.sort_unstable();
    held.dedup();
    let tasks = &v.spec().eval.tasks;
    let missing: Vec<&str> = tasks
        .iter()
        .map(String::as_str)
        .filter(|t| !held.contains(t))
        .collect();
    let quoted = |list: &[&str]| {
        list.iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let scorable = if held.is_empty() {
        ("none".to_string(), "没有".to_string())
    } else {
        (quoted(&held), quoted(&held))
    };
    let d = if missing.is_empty() {
        jobspec::Diagnostic::error(
            jobspec::Code::BadValue,
            "eval.tasks",
            format!(
                "`eval.tasks`: no one backend that runs {n} × {card} holds the data of all of {}; score them in separate jobs",
                quoted(&tasks.iter().map(String::as_str).collect::<Vec<_>>())
            ),
            format!(
                "`eval.tasks`：没有哪一个能运行 {n} × {card} 的后端同时有 {} 的数据；请分成几个作业评分",
                quoted(&tasks.iter().map(String::as_str).collect::<Vec<_>>())
            ),
        )
    } else {
        jobspec::Diagnostic::error(
            jobspec::Code::BadValue,
            "eval.tasks",
            format!("`eval.tasks`: no backend that runs {n} × {card} holds the data of {}, so it cannot be scored; tasks these backends can score: {}. The operator lists a task in a backend's eval_tasks once its data is on the cluster", quoted(&missing), scorable.0),
            format!("`eval.tasks`：能运行 {n} × {card} 的后端都没有 {} 的数据，无法评分；这些后端能评分的任务：{}。数据放到集群上之后，运维人员把任务列入后端的 eval_tasks", quoted(&missing), scorable.1),
        )
        .with_help(
            jobspec::diag::did_you_mean(missing[0], held.iter().copied()).map(|t| {
                jobspec::Message::new(format!("did you mean \"{t}\"?"), format!("是不是 \"{t}\"？"))
            }),
        )
    };
    ApiError::new(
        ErrorCode::InvalidSpec,
        format!("the spec cannot be submitted: {}", d.message.en),
    )
    .with_typed_details(&api::InvalidSpecDetails {
        diagnostics: vec![(&d).into()],
    })
}

/// One text in the app's languages (the wire type).
pub use api::Messages;

/// Why a job waits, from its backend's reason code, in every language of the app. The codes are
/// Slurm's, or the runner's `CardsInUse` (its declared cards are all taken); an unknown code
/// still reads as "waiting".
pub fn reason_messages(reason: &str) -> Messages {
    let (en, zh_cn) = crate::backends::slurm::state::pending_reason(reason);
    Messages { en, zh_cn }
}

/// A job as the API shows it to its owner.
pub use api::Job as JobWire;

/// A job's times as the edge knows them (ms since the epoch), for [`silent_end`].
pub struct Times {
    pub created: i64,
    /// When its newest attempt started.
    pub started: Option<i64>,
    /// When its backend or the job itself last answered.
    pub last_heard: Option<i64>,
    pub time_limit_s: Option<i64>,
    /// What its cluster held it suspended by then (a time limit counts run time only).
    pub suspended_ms: i64,
}

/// How long past its time limit a started job stays live while its backend answers nothing.
pub const SILENT_STARTED_MS: i64 = 60 * 60 * 1000;
/// The same for a job never seen to start (it may wait in a cluster's queue for days).
pub const SILENT_QUEUED_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// When a job whose backend does not answer is over: `(start, end)` of the card time it is
/// billed for (from its start until it was last heard from, never past its time limit; none for
/// a job never seen to start), or `None` while it may still run, or its time limit is unknown.
pub fn silent_end(t: &Times, now: i64) -> Option<(i64, i64)> {
    let limit_ms = t
        .time_limit_s?
        .max(0)
        .saturating_mul(1000)
        .saturating_add(t.suspended_ms.max(0));
    let (since, grace) = match t.started {
        Some(started) => (started, SILENT_STARTED_MS),
        None => (t.created, SILENT_QUEUED_MS),
    };
    // Past its limit and the grace, and silent for the grace too: a job requeued or resumed
    // lives past its first start's limit, and one slow answer is no silence.
    let heard = t.last_heard.unwrap_or(since).max(since);
    if now < since.saturating_add(limit_ms).saturating_add(grace)
        || now < heard.saturating_add(grace)
    {
        return None;
    }
    Some(match t.started {
        Some(started) => (started, heard.min(started.saturating_add(limit_ms))),
        None => (t.created, t.created),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use jobspec::spec::Backend as Pref;

    fn b(name: &str, kind: BackendKind, card: &str, n: u32) -> BackendConfig {
        BackendConfig {
            name: name.into(),
            kind,
            url: "http://x".into(),
            secret: String::new(),
            cards: [(card.to_string(), n)].into(),
            ..BackendConfig::default()
        }
    }

    #[test]
    fn picks_a_backend_with_the_cards() {
        let list = vec![
            b("small", BackendKind::Runner, "a100-80g", 2),
            b("big", BackendKind::Slurm, "a100-80g", 8),
        ];
        assert_eq!(
            pick_backend(&list, "a100-80g", 2, &Pref::Auto)
                .unwrap()
                .name,
            "small"
        );
        assert_eq!(
            pick_backend(&list, "a100-80g", 4, &Pref::Auto)
                .unwrap()
                .name,
            "big"
        );
        assert_eq!(
            pick_backend(&list, "a100-80g", 1, &Pref::Slurm)
                .unwrap()
                .name,
            "big"
        );
        assert_eq!(
            pick_backend(&list, "h100", 1, &Pref::Auto)
                .unwrap_err()
                .code,
            ErrorCode::NoBackend
        );
        assert_eq!(
            pick_backend(&list, "a100-80g", 16, &Pref::Auto)
                .unwrap_err()
                .status,
            409
        );
    }

    /// A backend whose nodes cannot hold what the spec offloads is passed over for one whose
    /// can; with none, the refusal is the plan's host finding, on the backend's own RAM.
    #[test]
    fn a_backend_is_picked_whose_nodes_hold_the_offload() {
        let spec = "name = \"o\"\ntask = \"sft\"\nmodel = \"qwen2.5-7b\"\n[data]\ndataset = \"d\"\n\
                    tokens = 1000000\nseq_len = 1024\n[train]\nmicro_batch = 1\ngrad_checkpointing = true\n\
                    [parallel]\nzero_stage = 3\noffload_optimizer = \"cpu\"\noffload_params = \"cpu\"\n\
                    [resources]\ncard = \"rtx-4090\"\ntime_limit = \"2d\"\n";
        let (v, diags) = jobspec::validate_toml(spec);
        let v = v.unwrap_or_else(|| panic!("{diags:?}"));
        assert!(jobspec::plan::finish(Some(v.clone()), Vec::new()).is_submittable());
        let small = BackendConfig {
            node_ram_gib: Some(64),
            ..b("small", BackendKind::Slurm, "rtx-4090", 8)
        };
        let big = b("big", BackendKind::Slurm, "rtx-4090", 8);
        let list = vec![small.clone(), big];
        let (chosen, planned) = pick_for_spec(&list, &v).unwrap();
        assert_eq!(chosen.name, "big");
        assert_eq!(planned.node_ram_bytes(), v.node_ram_bytes());
        let e = pick_for_spec(std::slice::from_ref(&small), &v).unwrap_err();
        assert_eq!((e.status, e.code), (422, ErrorCode::InvalidSpec), "{e:?}");
        let details = e.details;
        let d = &details["diagnostics"][0];
        assert_eq!(d["code"], "host-does-not-fit", "{details}");
        assert!(
            d["message"].as_str().unwrap().contains("64.0 GiB"),
            "{details}"
        );
        // No backend with the cards at all stays a 409.
        let none = pick_for_spec(&[b("x", BackendKind::Slurm, "a100-80g", 8)], &v).unwrap_err();
        assert_eq!(none.code, ErrorCode::NoBackend);
    }

    /// A CPU job longer than the runner's week goes to a backend that runs it that long, or is
    /// refused at `resources.time_limit` when the runner alone has its cards.
    #[test]
    fn a_job_past_the_runners_week_goes_elsewhere_or_is_refused() {
        let spec = |limit: &str| {
            let text = format!(
                "name = \"t\"\ntask = \"tiny-train\"\nmodel = \"stories260K\"\n[data]\n\
                 dataset = \"tinyshakespeare\"\nseq_len = 64\n[train]\nsteps = 10\n\
                 [resources]\ncard = \"cpu\"\ntime_limit = \"{limit}\"\n"
            );
            let (v, diags) = jobspec::validate_toml(&text);
            v.unwrap_or_else(|| panic!("{diags:?}"))
        };
        let runner = b("local", BackendKind::Runner, "cpu", 1);
        let slurm = b("hpc", BackendKind::Slurm, "cpu", 4);
        let both = vec![runner.clone(), slurm];
        assert_eq!(pick_for_spec(&both, &spec("7d")).unwrap().0.name, "local");
        assert_eq!(pick_for_spec(&both, &spec("10d")).unwrap().0.name, "hpc");
        let e = pick_for_spec(std::slice::from_ref(&runner), &spec("10d")).unwrap_err();
        assert_eq!(e.code, ErrorCode::NoBackend, "{e:?}");
        assert_eq!(e.details["field"], "resources.time_limit", "{e:?}");
    }

    /// A spec that offloads to NVMe goes only to a backend that names its nodes' NVMe folder;
    /// elsewhere it is refused as not fitting, with the NVMe it lacks.
    #[test]
    fn nvme_offload_goes_where_there_is_a_folder_for_it() {
        let spec = "name = \"n\"\ntask = \"sft\"\nmodel = \"llama-3-8b\"\n[data]\ndataset = \"alpaca\"\n\
                    seq_len = 1024\n[train]\nsteps = 100\nmicro_batch = 1\n\
                    [parallel]\nzero_stage = 3\noffload_optimizer = \"nvme\"\n\
                    [resources]\ncard = \"a100-80g\"\ncards_per_node = 8\ntime_limit = \"1d\"\n";
        let (v, diags) = jobspec::validate_toml(spec);
        let v = v.unwrap_or_else(|| panic!("{diags:?}"));
        let bare = b("bare", BackendKind::Slurm, "a100-80g", 8);
        let e = pick_for_spec(std::slice::from_ref(&bare), &v).unwrap_err();
        assert_eq!((e.status, e.code), (422, ErrorCode::InvalidSpec), "{e:?}");
        assert_eq!(
            e.details["diagnostics"][0]["code"], "host-does-not-fit",
            "{:?}",
            e.details
        );
        let nvme = BackendConfig {
            nvme_path: Some("/local/nvme".into()),
            ..b("nvme", BackendKind::Slurm, "a100-80g", 8)
        };
        let both = [bare, nvme];
        let (chosen, _) = pick_for_spec(&both, &v).unwrap();
        assert_eq!(chosen.name, "nvme");
    }

    /// ChatGLM3 loads only by running its repo's code: it goes only to a backend whose operator
    /// lists it in `trust_remote_code` (which reaches the job as `ONRAMP_TRUST_REMOTE_CODE`), and
    /// is refused, naming the setting, where none does; other models go anywhere.
    #[test]
    fn a_model_of_remote_code_goes_only_where_the_operator_allows_it() {
        use crate::backends::config::parse;
        let spec = |model: &str| {
            let (v, diags) = jobspec::validate_toml(&format!(
                "name = \"g\"\ntask = \"lora\"\nmodel = \"{model}\"\n[data]\ndataset = \"alpaca\"\n\
                 seq_len = 1024\n[train]\nsteps = 10\n[resources]\ncard = \"a100-80g\"\ntime_limit = \"1h\"\n"
            ));
            v.unwrap_or_else(|| panic!("{diags:?}"))
        };
        let list = parse(Some(
            r#"[{"name": "plain", "kind": "slurm", "url": "http://127.0.0.1:1", "secret": "u:t", "cards": {"a100-80g": 8}},
                {"name": "glm", "kind": "runner", "url": "http://127.0.0.1:2", "cards": {"a100-80g": 8},
                 "trust_remote_code": ["ChatGLM3-6B", "chatglm3-6b"]}]"#,
        ))
        .unwrap();
        assert_eq!(
            list[1].trust_remote_code,
            ["chatglm3-6b"],
            "the catalogue's id, once"
        );
        assert_eq!(list[1].job_env()["ONRAMP_TRUST_REMOTE_CODE"], "chatglm3-6b");
        assert!(!list[0].job_env().contains_key("ONRAMP_TRUST_REMOTE_CODE"));
        let glm = spec("chatglm3-6b");
        assert_eq!(pick_for_spec(&list, &glm).unwrap().0.name, "glm");
        assert_eq!(
            pick_for_spec(&list, &spec("qwen2.5-7b")).unwrap().0.name,
            "plain"
        );
        let e = pick_for_spec(&list[..1], &glm).unwrap_err();
        assert_eq!((e.status, e.code), (409, ErrorCode::NoBackend), "{e:?}");
        assert!(
            e.message.contains("trust_remote_code") && e.message.contains("chatglm3-6b"),
            "{}",
            e.message
        );
        // Only models that need it may be listed, and the job cannot be given it another way.
        for bad in [
            r#""trust_remote_code": ["qwen2.5-7b"]"#,
            r#""trust_remote_code": ["nope"]"#,
            r#""env": {"ONRAMP_TRUST_REMOTE_CODE": "chatglm3-6b"}"#,
        ] {
            let e = parse(Some(&format!(
                r#"[{{"name": "x", "kind": "runner", "url": "http://127.0.0.1:1", {bad}}}]"#
            )))
            .unwrap_err();
            assert!(
                e.contains("trust_remote_code") || e.contains("ONRAMP_TRUST_REMOTE_CODE"),
                "{e}"
            );
        }
    }

    /// A spec with benchmark tasks goes only to a backend that lists every one in `eval_tasks`;
    /// none holding one, or none holding them all, is a 422 at `eval.tasks` in both languages.
    #[test]
    fn benchmarks_go_only_where_their_data_is() {
        use crate::backends::config::parse;
        let spec = |tasks: &str| {
            let (v, diags) = jobspec::validate_toml(&format!(
                "name = \"g\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\n[data]\ndataset = \"alpaca\"\n\
                 seq_len = 1024\n[train]\nsteps = 10\n[resources]\ncard = \"a100-80g\"\ntime_limit = \"1h\"\n\
                 [eval]\ntasks = [{tasks}]\n"
            ));
            v.unwrap_or_else(|| panic!("{diags:?}"))
        };
        let list = parse(Some(
            r#"[{"name": "bare", "kind": "runner", "url": "http://127.0.0.1:1", "cards": {"a100-80g": 8}},
                {"name": "mmlu", "kind": "runner", "url": "http://127.0.0.1:2", "cards": {"a100-80g": 8},
                 "eval_tasks": ["mmlu", "cmmlu"]},
                {"name": "ceval", "kind": "runner", "url": "http://127.0.0.1:3", "cards": {"a100-80g": 8},
                 "eval_tasks": ["ceval-valid"]}]"#,
        ))
        .unwrap();
        let to = |tasks: &str| pick_for_spec(&list, &spec(tasks)).map(|(b, _)| b.name.as_str());
        assert_eq!(to(""), Ok("bare"));
        assert_eq!(to("\"cmmlu\", \"mmlu\""), Ok("mmlu"));
        assert_eq!(to("\"ceval-valid\""), Ok("ceval"));
        let refused = |tasks: &str| {
            let e = pick_for_spec(&list, &spec(tasks)).unwrap_err();
            assert_eq!((e.status, e.code), (422, ErrorCode::InvalidSpec), "{e:?}");
            let d = &e.details["diagnostics"][0];
            assert_eq!(d["path"], "eval.tasks", "{d}");
            let zh = d["messages"]["zh-CN"].as_str().unwrap().to_string();
            assert!(zh.contains("eval_tasks") || zh.contains("分成"), "{zh}");
            (e.message, d["help"]["en"].as_str().map(str::to_string))
        };
        let (missing, help) = refused("\"mmlu\", \"cmmlu-x\"");
        assert!(
            missing.contains("\"cmmlu-x\", so it cannot be scored")
                && missing.contains("\"ceval-valid\", \"cmmlu\", \"mmlu\"")
                && missing.contains("eval_tasks"),
            "{missing}"
        );
        assert_eq!(help.as_deref(), Some("did you mean \"cmmlu\"?"));
        let (apart, _) = refused("\"mmlu\", \"ceval-valid\"");
        assert!(apart.contains("separate jobs"), "{apart}");
        // No backend lists any: the task has no data configured anywhere.
        let e = pick_for_spec(&list[..1], &spec("\"mmlu\"")).unwrap_err();
        assert!(e.message.contains("can score: none"), "{}", e.message);
        // A backend's list holds task names only.
        let bad = r#"[{"name": "x", "kind": "runner", "url": "http://127.0.0.1:1", "eval_tasks": ["a b"]}]"#;
        assert!(parse(Some(bad)).unwrap_err().contains("eval_tasks"));
    }

    #[test]
    fn wait_reasons_read_in_both_languages() {
        let m = reason_messages("Resources");
        assert!(m.en.starts_with("waiting for resources"), "{m:?}");
        assert!(m.zh_cn.contains("GPU"), "{m:?}");
        let json = serde_json::to_value(&m).unwrap();
        assert!(json["zh-CN"].is_string(), "{json}");
        assert_eq!(reason_messages("Whatever").en, "waiting (Whatever)");
        let m = reason_messages("CardsInUse");
        assert!(m.en.starts_with("waiting for a free card"), "{m:?}");
        assert!(m.zh_cn.starts_with("等待空闲的卡"), "{m:?}");
    }

    #[test]
    fn a_job_whose_backend_is_silent_ends_an_hour_past_its_limit_billed_until_last_heard() {
        let hour = 3_600_000;
        let t = Times {
            created: 0,
            started: Some(10_000),
            last_heard: Some(10_000 + hour / 2),
            time_limit_s: Some(3_600),
            suspended_ms: 0,
        };
        // Live until its limit and an hour more have passed since it started.
        assert_eq!(silent_end(&t, 10_000 + 2 * hour - 1), None);
        // Heard from lately (a requeued job runs on past its first start's limit): one
        // unanswered poll is no silence.
        let lately = Times {
            last_heard: Some(10_000 + 5 * hour),
            ..t
        };
        assert_eq!(silent_end(&lately, 10_000 + 5 * hour + hour / 2), None);
        assert_eq!(
            silent_end(&lately, 10_000 + 6 * hour),
            Some((10_000, 10_000 + hour))
        );
        assert_eq!(
            silent_end(&t, 10_000 + 2 * hour),
            Some((10_000, 10_000 + hour / 2))
        );
        // Heard from after its limit (a late report): billed no further than the limit.
        let late = Times {
            last_heard: Some(10_000 + 3 * hour),
            ..t
        };
        assert_eq!(
            silent_end(&late, 10_000 + 4 * hour),
            Some((10_000, 10_000 + hour))
        );
        // Never started: a week's grace, and nothing billed.
        let queued = Times {
            created: 5,
            started: None,
            last_heard: None,
            time_limit_s: Some(60),
            suspended_ms: 0,
        };
        assert_eq!(silent_end(&queued, 5 + 60_000 + SILENT_STARTED_MS), None);
        assert_eq!(
            silent_end(&queued, 5 + 60_000 + SILENT_QUEUED_MS),
            Some((5, 5))
        );
        // No known limit: never ended by silence.
        let unknown = Times {
            time_limit_s: None,
            ..queued
        };
        assert_eq!(silent_end(&unknown, i64::MAX), None);
        // Suspended half an hour by its cluster, last heard 90 minutes in: it ran its whole
        // hour, which ends half an hour later on the wall clock (the suspension is taken out of
        // the span again when billed).
        let suspended = Times {
            last_heard: Some(10_000 + 3 * hour / 2),
            suspended_ms: hour / 2,
            ..t
        };
        assert_eq!(silent_end(&suspended, 10_000 + 2 * hour), None);
        assert_eq!(
            silent_end(&suspended, 10_000 + 3 * hour),
            Some((10_000, 10_000 + 3 * hour / 2))
        );
    }
}
