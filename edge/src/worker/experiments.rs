//! Saved experiments: immutable snapshots of a spec, its estimates and (for a finished job) its
//! metrics and result, under an unguessable 128-bit id. Snapshots never contain the owner's
//! email or balance; unpublished ones are visible to their owner only.

use super::access::User;
use super::db::{self, n, now_ms, random_hex, s};
use super::http::{self, ApiResult};
use super::jobs;
use crate::error::{ApiError, ErrorCode};
use crate::wire::{self, NewExperiment};
use api::results::{MAX_RESULTS_BYTES, RESULTS_ARTIFACT, RunResults};
use api::{Experiment, ExperimentJob, SavedExperiment};
use serde::Deserialize;
use worker::{Env, Request};

use api::experiments::MAX_TITLE_CHARS;

pub async fn create(user: User, mut req: Request, env: &Env) -> ApiResult<SavedExperiment> {
    let body = http::body(&mut req, wire::MAX_SPEC_BYTES).await?;
    // What persists under a link is for accounts whose owner opened their verification mail, so
    // sign-ups by the hundred cannot fill the database.
    if !user.email_verified {
        return Err(ApiError::new(
            ErrorCode::EmailNotVerified,
            "verify the account's email first (the link is in the mail sent at sign-up): only a \
             verified account can save experiments",
        ));
    }
    let e: NewExperiment = wire::parse_json(&body)?;
    if let Some(t) = &e.title {
        wire::check_label("title", t, MAX_TITLE_CHARS)?;
    }
    let (name, plan) = saved_plan(&e.spec)?;
    let job = match e.job_id.as_deref() {
        None => None,
        Some(id) => Some(finished_job(env, &user, id, e.share_artifacts).await?),
    };
    if e.share_artifacts && e.job_id.is_none() {
        return Err(ApiError::new(
            ErrorCode::InvalidField,
            "share_artifacts shares a job's artifacts: name the job in job_id",
        )
        .with_field("share_artifacts"));
    }
    let title: String = e
        .title
        .unwrap_or(name)
        .chars()
        .take(MAX_TITLE_CHARS)
        .collect();
    let id = random_hex(16)?;
    let now = now_ms();
    let shared = e.job_id.as_deref().filter(|_| e.share_artifacts);
    let artifacts = match shared {
        Some(job) => {
            super::artifacts::stored_of(env, job, |name| {
                format!(
                    "/api/experiments/{id}/artifacts/{}",
                    name.replace('/', "%2F")
                )
            })
            .await?
        }
        None => Vec::new(),
    };
    let snapshot = Experiment {
        id: id.clone(),
        title,
        created_at: crate::time::format_rfc3339_ms(now),
        published: e.published,
        spec: e.spec,
        plan,
        job,
        artifacts,
        yours: false,
    };
    store(env, &user, &snapshot, shared, now).await?;
    Ok(SavedExperiment {
        url: format!("/e/{id}"),
        id,
        published: e.published,
    })
}

/// The plan of a spec that may be saved (a valid one), as the snapshot keeps it, with the
/// spec's name.
fn saved_plan(spec: &str) -> ApiResult<(String, serde_json::Value)> {
    let plan = if spec.trim_start().starts_with('{') {
        jobspec::plan_json(spec)
    } else {
        jobspec::plan_toml(spec)
    };
    let Some(valid) = &plan.valid else {
        return Err(ApiError::new(
            ErrorCode::InvalidSpec,
            "only a valid spec can be saved; see details.diagnostics",
        )
        .with_typed_details(&api::InvalidSpecDetails {
            diagnostics: plan.diagnostics.iter().map(Into::into).collect(),
        }));
    };
    let mut wire_plan = serde_json::to_value(jobspec::PlanWire::from(&plan))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    // The launch artifacts are derived from the spec and can be regenerated; keep snapshots small.
    if let Some(obj) = wire_plan.as_object_mut() {
        obj.remove("artifacts");
    }
    Ok((valid.spec().name.clone(), wire_plan))
}

/// The caller's finished job `id` as a snapshot keeps it, with its metrics and results; the
/// results' samples (prompts from the user's data, and the answers) only when the owner shares
/// the job's files (`samples`).
async fn finished_job(env: &Env, user: &User, id: &str, samples: bool) -> ApiResult<ExperimentJob> {
    let job = jobs::owned(env, user, id).await?;
    if !job.state().is_terminal() {
        return Err(ApiError::new(
            ErrorCode::JobNotFinished,
            format!("job {id} is still {}", job.state().as_str()),
        ));
    }
    let metrics = super::job_metrics::metrics_after(env, &job.id, 0).await?;
    let results = results_of(env, &job.id).await?.map(|mut r| {
        if !samples {
            r.samples.clear();
        }
        r
    });
    let w = job.wire();
    Ok(ExperimentJob {
        state: w.state,
        card: w.card,
        cards: w.cards,
        charged_fen: w.charged_fen,
        started_at: w.started_at,
        ended_at: w.ended_at,
        message: w.message,
        metrics,
        results,
    })
}

/// The results the job's trainer left (`results.json`), as a snapshot keeps them; `None` when
/// it left none, or a file that does not read (a job wrote it: it is not trusted).
async fn results_of(env: &Env, job_id: &str) -> ApiResult<Option<RunResults>> {
    let bytes = super::artifacts::small(env, job_id, RESULTS_ARTIFACT, MAX_RESULTS_BYTES).await?;
    Ok(bytes
        .and_then(|b| serde_json::from_slice::<RunResults>(&b).ok())
        .and_then(RunResults::for_snapshot))
}

fn limits(env: &Env) -> (i64, i64) {
    (
        db::setting(env, "EXPERIMENTS_PER_USER", 1000),
        db::setting(env, "EXPERIMENT_BYTES_PER_USER", 64 << 20),
    )
}

/// An account's saved experiments against its limits (`GET /api/me`).
pub async fn usage(env: &Env, user_id: &str) -> ApiResult<api::ExperimentUsage> {
    #[derive(Deserialize)]
    struct Used {
        count: i64,
        bytes: Option<i64>,
    }
    let used = db::first::<Used>(
        env,
        "SELECT COUNT(*) AS count, SUM(LENGTH(CAST(snapshot AS BLOB))) AS bytes FROM experiments WHERE user_id = ?",
        &[s(user_id)],
    )
    .await?;
    let (count, bytes) = used.map_or((0, 0), |u| (u.count, u.bytes.unwrap_or(0)));
    let (max_count, quota_bytes) = limits(env);
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(api::ExperimentUsage {
        count: u(count),
        max_count: u(max_count),
        used_bytes: u(bytes),
        quota_bytes: u(quota_bytes),
    })
}

/// Stores a snapshot under the account's limits of saved experiments: how many, and how many
/// bytes all of them take.
async fn store(
    env: &Env,
    user: &User,
    snapshot: &Experiment,
    artifacts_job: Option<&str>,
    now: i64,
) -> ApiResult<()> {
    let text = serde_json::to_string(snapshot).map_err(|e| ApiError::internal(e.to_string()))?;
    // One statement counts and inserts, so parallel saves cannot pass the limits together.
    let (limit, quota) = limits(env);
    let inserted = db::run(
        env,
        "INSERT INTO experiments (id, user_id, published, snapshot, created_at, artifacts_job_id) \
         SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM experiments WHERE user_id = ?) < ? \
         AND (SELECT COALESCE(SUM(LENGTH(CAST(snapshot AS BLOB))), 0) FROM experiments WHERE user_id = ?) \
         + LENGTH(CAST(? AS BLOB)) <= ?",
        &[
            s(&snapshot.id),
            s(&user.id),
            n(i64::from(snapshot.published)),
            s(&text),
            n(now),
            db::opt_s(artifacts_job),
            s(&user.id),
            n(limit),
            s(&user.id),
            s(&text),
            n(quota),
        ],
    )
    .await?;
    if inserted != 0 {
        return Ok(());
    }
    let used = usage(env, &user.id).await?;
    if used.count >= used.max_count {
        return Err(db::limit_reached("saved experiments per account", limit));
    }
    Err(ApiError::new(
        ErrorCode::LimitReached,
        format!(
            "the account's saved experiments may take {quota} bytes and {} are in use, so this one \
             ({} bytes) does not fit; delete experiments you no longer need",
            used.used_bytes,
            text.len()
        ),
    )
    .with_details(serde_json::json!({
        "limit": "experiment_bytes",
        "quota_bytes": quota,
        "used_bytes": used.used_bytes,
    })))
}

/// The caller's own experiment `id`: 404 for one that is missing or someone else's alike.
async fn owned_row(user: &User, env: &Env, id: &str) -> ApiResult<i64> {
    wire::check_id(id)?;
    #[derive(Deserialize)]
    struct Row {
        bytes: i64,
    }
    db::first::<Row>(
        env,
        "SELECT LENGTH(CAST(snapshot AS BLOB)) AS bytes FROM experiments WHERE id = ? AND user_id = ?",
        &[s(id), s(&user.id)],
    )
    .await?
    .map(|r| r.bytes)
    .ok_or_else(|| ApiError::not_found(format!("no experiment {id}")))
}

/// `PATCH /api/experiments/{id}`: the owner publishes the snapshot or takes its link back
/// (anyone else then gets 404); the snapshot itself stays as it was saved.
pub async fn change(
    user: User,
    mut req: Request,
    env: &Env,
    id: &str,
) -> ApiResult<SavedExperiment> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let c: api::ExperimentChange = wire::parse_json(&body)?;
    owned_row(&user, env, id).await?;
    db::run(
        env,
        "UPDATE experiments SET published = ?, snapshot = json_set(snapshot, '$.published', json(?)) \
         WHERE id = ? AND user_id = ?",
        &[
            n(i64::from(c.published)),
            s(if c.published { "true" } else { "false" }),
            s(id),
            s(&user.id),
        ],
    )
    .await?;
    Ok(SavedExperiment {
        id: id.to_string(),
        url: format!("/e/{id}"),
        published: c.published,
    })
}

/// `DELETE /api/experiments/{id}`: the owner deletes the snapshot; its link then finds nothing.
pub async fn delete(user: User, env: &Env, id: &str) -> ApiResult<api::ExperimentDeleted> {
    let bytes = owned_row(&user, env, id).await?;
    db::run(
        env,
        "DELETE FROM experiments WHERE id = ? AND user_id = ?",
        &[s(id), s(&user.id)],
    )
    .await?;
    Ok(api::ExperimentDeleted {
        id: id.to_string(),
        freed_bytes: u64::try_from(bytes).unwrap_or(0),
    })
}

/// An experiment's row as the caller may see it: 404 for a missing one, and for an unpublished
/// one unless the caller owns it.
struct Visible {
    snapshot: String,
    artifacts_job_id: Option<String>,
    /// The viewer saved it.
    yours: bool,
}

async fn visible(viewer: Option<User>, env: &Env, id: &str) -> ApiResult<Visible> {
    wire::check_id(id)?;
    #[derive(Deserialize)]
    struct Row {
        user_id: String,
        published: i64,
        snapshot: String,
        #[serde(default)]
        artifacts_job_id: Option<String>,
    }
    let not_found = || ApiError::not_found(format!("no experiment {id}"));
    let row: Row = db::first(
        env,
        "SELECT user_id, published, snapshot, artifacts_job_id FROM experiments WHERE id = ?",
        &[s(id)],
    )
    .await?
    .ok_or_else(not_found)?;
    let yours = viewer.is_some_and(|user| user.id == row.user_id);
    // Unpublished: the owner only; everyone else is told it does not exist.
    if row.published == 0 && !yours {
        return Err(not_found());
    }
    Ok(Visible {
        snapshot: row.snapshot,
        artifacts_job_id: row.artifacts_job_id,
        yours,
    })
}

fn snapshot(v: &Visible) -> ApiResult<Experiment> {
    serde_json::from_str(&v.snapshot)
        .map_err(|e| ApiError::internal(format!("stored snapshot: {e}")))
}

/// A saved experiment; `viewer` is the signed-in caller, if any.
pub async fn get(viewer: Option<User>, env: &Env, id: &str) -> ApiResult<Experiment> {
    let v = visible(viewer, env, id).await?;
    Ok(Experiment {
        yours: v.yours,
        ..snapshot(&v)?
    })
}

/// `GET /api/experiments/{id}/artifacts/{name}`: one of the artifacts the snapshot shares, for
/// whoever may see the snapshot; 404 for a name it does not share.
pub async fn artifact(
    viewer: Option<User>,
    req: Request,
    env: &Env,
    id: &str,
    segment: &str,
) -> ApiResult<worker::Response> {
    let v = visible(viewer, env, id).await?;
    let name = crate::artifacts::parse_name(segment)?;
    let shared = snapshot(&v)?.artifacts.into_iter().find(|a| a.name == name);
    let (Some(job), Some(a)) = (v.artifacts_job_id.as_deref(), shared) else {
        return Err(ApiError::not_found(format!(
            "experiment {id} shares no artifact {name:?}"
        )));
    };
    super::artifacts::serve_shared(env, job, &a.name, &a.sha256, &req).await
}
