//! `GET /api/jobs/{id}/resume[/{name}]`: a job that continues an earlier job of the same
//! account (`checkpoint.resume_from`) on a backend that does not have that job's folder fetches
//! the checkpoint the earlier job uploaded (`checkpoint.upload`), with its own token: every file
//! of its latest `checkpoint-<step>/`, streamed from R2. Another account's job, a job that
//! continues none, and a file outside that checkpoint are all "not found".

use super::access::JobCaller;
use super::artifacts;
use super::http::ApiResult;
use super::jobs::row::{self, JobRow};
use crate::error::ApiError;
use api::artifacts::checkpoint_step;
use api::{Artifact, ResumeCheckpoint};
use worker::{Env, Request, Response};

/// The latest checkpoint job `job_id` uploaded: its step and its files, each with the URL that
/// `url_of(name)` gives it. `None` when it uploaded none.
pub async fn uploaded(
    env: &Env,
    job_id: &str,
    url_of: impl Fn(&str) -> String,
) -> ApiResult<Option<(u64, Vec<Artifact>)>> {
    let stored = artifacts::stored_of(env, job_id, url_of).await?;
    let Some(step) = stored.iter().filter_map(|a| checkpoint_step(&a.name)).max() else {
        return Ok(None);
    };
    let files = stored
        .into_iter()
        .filter(|a| checkpoint_step(&a.name) == Some(step))
        .collect();
    Ok(Some((step, files)))
}

/// The job `job` continues, when its spec names one of the same account's.
async fn continued(env: &Env, job: &JobRow) -> ApiResult<String> {
    let none = || ApiError::not_found(format!("job {} continues no earlier job", job.id));
    // Read, not checked again: what an accepted spec continues, whatever rules came since.
    let id = jobspec::parse_text(&job.spec, jobspec::Format::Toml)
        .0
        .and_then(|v| v.checkpoint.resume_from)
        .ok_or_else(none)?;
    row::by_id(env, &id)
        .await?
        .filter(|earlier| earlier.user_id == job.user_id)
        .map(|earlier| earlier.id)
        .ok_or_else(|| ApiError::not_found(format!("job {id} is not found")))
}

/// `GET /api/jobs/{id}/resume`.
pub async fn list(caller: JobCaller, env: &Env) -> ApiResult<ResumeCheckpoint> {
    let job = caller.job();
    let earlier = continued(env, job).await?;
    let url_of = |name: &str| format!("/api/jobs/{}/resume/{}", job.id, name.replace('/', "%2F"));
    let (step, artifacts) = uploaded(env, &earlier, url_of).await?.ok_or_else(|| {
        ApiError::not_found(format!(
            "job {earlier} uploaded no checkpoint (a job uploads its latest one with \
             `checkpoint.upload = true`)"
        ))
    })?;
    Ok(ResumeCheckpoint {
        job_id: earlier,
        step,
        artifacts,
    })
}

/// `GET /api/jobs/{id}/resume/{name}`: one file of that checkpoint (one range when asked).
pub async fn file(
    caller: JobCaller,
    req: Request,
    env: &Env,
    segment: &str,
) -> ApiResult<Response> {
    let job = caller.job();
    let earlier = continued(env, job).await?;
    let name = crate::artifacts::parse_name(segment)?;
    let latest = uploaded(env, &earlier, str::to_string).await?;
    let listed = latest.is_some_and(|(_, files)| files.iter().any(|a| a.name == name));
    if !listed {
        return Err(ApiError::not_found(format!(
            "{name:?} is not a file of the checkpoint job {earlier} uploaded"
        )));
    }
    artifacts::serve_stored(env, &earlier, &name, &req).await
}
