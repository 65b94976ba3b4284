//! The comparison page's reads: each run a link names, fetched as the edge serves it. A job of
//! yours: the job, every page of its metrics and its `results.json` artifact. An experiment: its
//! snapshot, which keeps the run's metrics and results (an older snapshot's results from the
//! artifacts it shares). One refusal stops the page, saying which run.

use crate::api;
use crate::api_wire::{ApiError, Experiment, Job, MetricPoint, MetricsPage};
use crate::compare::{Run, RunRef};
use ::api::Artifact;
use ::api::results::{MAX_RESULTS_BYTES, RESULTS_ARTIFACT, RunResults};

/// The most pages of metrics read per job.
const MAX_PAGES: usize = 1000;

/// Every run of `refs`, in order; the first refusal, with the run it was about.
pub async fn load(refs: Vec<RunRef>) -> Result<Vec<Run>, (RunRef, ApiError)> {
    let mut runs = Vec::new();
    for r in refs {
        let run = match &r {
            RunRef::Job(id) => job(id).await,
            RunRef::Experiment(id) => experiment(id).await,
        };
        runs.push(run.map_err(|e| (r.clone(), e))?);
    }
    Ok(runs)
}

async fn job(id: &str) -> Result<Run, ApiError> {
    let job: Job = api::get(&format!("/api/jobs/{id}")).await?;
    let mut points: Vec<MetricPoint> = Vec::new();
    let mut since = 0;
    for _ in 0..MAX_PAGES {
        let page: MetricsPage = api::get(&format!("/api/jobs/{id}/metrics?since={since}")).await?;
        let done = page.metrics.is_empty() || page.next_since <= since;
        points.extend(page.metrics);
        if done {
            break;
        }
        since = page.next_since;
    }
    let list: Result<::api::ArtifactList, _> = api::get(&format!("/api/jobs/{id}/artifacts")).await;
    let results = match list {
        Ok(l) => results_among(&l.artifacts).await,
        Err(_) => None,
    };
    Ok(Run::of_job(job, points, results))
}

async fn experiment(id: &str) -> Result<Run, ApiError> {
    let x: Experiment = api::get(&format!("/api/experiments/{id}")).await?;
    let shared = match x.job.as_ref().map(|j| j.results.is_none()) {
        Some(true) => results_among(&x.artifacts).await,
        _ => None,
    };
    let mut run = Run::of_experiment(x);
    if run.results.is_none() {
        run.results = shared;
    }
    Ok(run)
}

/// The `results.json` among `artifacts`, when there is one small enough to read and it reads.
async fn results_among(artifacts: &[Artifact]) -> Option<RunResults> {
    let a = artifacts
        .iter()
        .find(|a| a.name == RESULTS_ARTIFACT && a.size <= MAX_RESULTS_BYTES)?;
    api::get::<RunResults>(&a.url).await.ok()
}
