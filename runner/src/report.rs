//! Reports to the edge: `POST report_url` with `Authorization: Bearer <report_token>` and a body
//! `{"state"?, "metrics"?: [...], "message"?}`. Used by the runner (state changes) and by the
//! tiny-train child (metrics). A report that fails is logged and never stops a job.

use crate::wire::ReportTarget;
use serde::Serialize;
use std::time::Duration;

/// One metrics point as the edge stores it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricPoint {
    pub step: u64,
    pub loss: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub val_loss: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
    pub elapsed_s: f64,
}

/// The body of one report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<MetricPoint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// With `"running"`: which run of the job started (after the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// Posts one report, trying `attempts` times with a growing pause; the error names the URL and
/// the last failure.
pub fn post_blocking(target: &ReportTarget, report: &Report, attempts: u32) -> Result<(), String> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build(),
    );
    let mut last = String::new();
    for attempt in 0..attempts.max(1) {
        if attempt > 0 {
            // Backing off gives an edge that is restarting a moment to come back.
            std::thread::sleep(Duration::from_millis(250 << attempt.min(4)));
        }
        match agent
            .post(&target.url)
            .header("authorization", &format!("Bearer {}", target.token))
            .send_json(report)
        {
            Ok(resp) if resp.status().is_success() => return Ok(()),
            Ok(resp) => {
                let status = resp.status().as_u16();
                last = format!("HTTP {status}");
                // A 4xx will not change on retry (bad token, unknown job).
                if (400..500).contains(&status) {
                    break;
                }
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("report to {} failed: {last}", target.url))
}

/// [`post_blocking`] off the async runtime's threads.
pub async fn post(target: ReportTarget, report: Report) -> Result<(), String> {
    tokio::task::spawn_blocking(move || post_blocking(&target, &report, 4))
        .await
        .map_err(|e| format!("report task failed: {e}"))?
}
