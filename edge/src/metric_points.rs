//! What a job may report as metric points: every number in its range, steps that only go up, and
//! the job's own metrics lines read as points and nothing else. Whatever passes, a chart can
//! draw, however a job was written.

use crate::error::{ApiError, ErrorCode};
use api::{MetricPoint, Report};

/// The content type of a report that is the job's own metrics lines, as it printed them: one
/// JSON object a line, each read as a metric point and nothing else (the Slurm job script
/// forwards the lines it sees this way, so no text of the job's is ever spliced into JSON).
pub const METRIC_LINES: &str = "application/x-ndjson";

/// A report of metrics lines ([`METRIC_LINES`]): every non-empty line one metric point. A line
/// cannot say anything but a point: keys of a report (`state`, `message`) are just keys a point
/// does not have.
pub fn parse_metric_lines(body: &[u8]) -> Result<Report, ApiError> {
    let mut metrics = Vec::new();
    for (i, line) in body.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let not_a_point = |why: String| {
            ApiError::new(
                ErrorCode::InvalidMetric,
                format!("line {} is not a metrics line: {why}", i + 1),
            )
            .with_details(serde_json::json!({"line": i + 1}))
        };
        // An object, as every body the API takes (serde would also read a point from an array).
        if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(not_a_point("it is not a JSON object".into()));
        }
        let point: MetricPoint =
            serde_json::from_slice(line).map_err(|e| not_a_point(e.to_string()))?;
        metrics.push(point);
    }
    Ok(Report {
        state: None,
        metrics,
        message: None,
        attempt: None,
    })
}

/// The highest step a metric point may carry: the most steps a spec may ask for.
pub const MAX_METRIC_STEP: u64 = 1_000_000_000_000;

/// Each number of a metric point against what it can mean: a loss is a cross-entropy (not
/// negative; the bound is far past any diverged run, whose losses the chart should still show),
/// a learning rate is what a spec may ask for, a rate and a time are not negative and stay below
/// what any run reaches, and a gradient norm (not stored) is any finite size.
const METRIC_RANGES: [(&str, f64, f64); 7] = [
    ("loss", 0.0, 1e12),
    ("val_loss", 0.0, 1e12),
    ("lr", 0.0, 10.0),
    ("tokens_per_s", 0.0, 1e12),
    ("elapsed_s", 0.0, 1e10),
    ("grad_norm", 0.0, f64::MAX),
    ("epoch", 0.0, 1e6),
];

fn bad_metric(i: usize, field: &str, message: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidMetric, message)
        .with_details(serde_json::json!({"index": i, "field": field}))
}

/// One metric point: every number finite and in its range, the step at most [`MAX_METRIC_STEP`].
fn check_metric(i: usize, m: &MetricPoint) -> Result<(), ApiError> {
    let values = [
        Some(m.loss),
        m.val_loss,
        m.lr,
        m.tokens_per_s,
        Some(m.elapsed_s),
        m.grad_norm,
        m.epoch,
    ];
    for ((field, lo, hi), value) in METRIC_RANGES.iter().zip(values) {
        let Some(v) = value else { continue };
        if !v.is_finite() || v < *lo || v > *hi {
            return Err(bad_metric(
                i,
                field,
                format!("metrics[{i}].{field} = {v} is out of range ({lo} to {hi})"),
            ));
        }
    }
    if m.step > MAX_METRIC_STEP {
        return Err(bad_metric(
            i,
            "step",
            format!(
                "metrics[{i}].step = {} is out of range (0 to {MAX_METRIC_STEP})",
                m.step
            ),
        ));
    }
    Ok(())
}

/// The points of one report: each in its ranges, their steps strictly increasing.
pub fn check_points(points: &[MetricPoint]) -> Result<(), ApiError> {
    let mut previous: Option<u64> = None;
    for (i, m) in points.iter().enumerate() {
        check_metric(i, m)?;
        if previous.is_some_and(|p| m.step <= p) {
            return Err(bad_metric(
                i,
                "step",
                format!(
                    "metrics[{i}].step = {} does not follow the step before it; steps only go up",
                    m.step
                ),
            ));
        }
        previous = Some(m.step);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics_report(points: &str) -> Report {
        serde_json::from_str(&format!(r#"{{"metrics":[{points}]}}"#)).unwrap()
    }

    /// What a chart cannot draw or a job cannot have measured is refused, naming the point and
    /// the field; steps only go up within a report.
    #[test]
    fn metric_points_are_held_to_their_ranges() {
        let ok = r#"{"step":0,"loss":0.0,"elapsed_s":0.0}"#;
        assert!(check_points(&metrics_report(ok).metrics).is_ok());
        for (point, field) in [
            (r#"{"step":1,"loss":-0.5,"elapsed_s":1}"#, "loss"),
            (r#"{"step":1,"loss":1e13,"elapsed_s":1}"#, "loss"),
            (
                r#"{"step":1,"loss":1,"val_loss":-1,"elapsed_s":1}"#,
                "val_loss",
            ),
            (r#"{"step":1,"loss":1,"lr":11,"elapsed_s":1}"#, "lr"),
            (
                r#"{"step":1,"loss":1,"tokens_per_s":-3,"elapsed_s":1}"#,
                "tokens_per_s",
            ),
            (r#"{"step":1,"loss":1,"elapsed_s":-1}"#, "elapsed_s"),
            (
                r#"{"step":1,"loss":1,"elapsed_s":1,"grad_norm":-2}"#,
                "grad_norm",
            ),
            (r#"{"step":1,"loss":1,"elapsed_s":1,"epoch":-0.1}"#, "epoch"),
            (
                r#"{"step":9223372036854775807,"loss":1,"elapsed_s":1}"#,
                "step",
            ),
            (r#"{"step":1000000000001,"loss":1,"elapsed_s":1}"#, "step"),
        ] {
            let e = check_points(&metrics_report(&format!("{ok},{point}")).metrics).unwrap_err();
            assert_eq!(
                (e.status, e.code),
                (400, ErrorCode::InvalidMetric),
                "{point}"
            );
            assert_eq!(e.details["index"], 1, "{point}");
            assert_eq!(e.details["field"], field, "{point}: {}", e.message);
            assert!(
                e.message.contains(&format!("metrics[1].{field}")),
                "{}",
                e.message
            );
        }
        // A tiny loss after a zero one is a number a job may print: the chart draws it.
        let tiny = r#"{"step":1,"loss":2.5e-323,"elapsed_s":1}"#;
        assert!(check_points(&metrics_report(&format!("{ok},{tiny}")).metrics).is_ok());
        for (a, b) in [(2, 2), (3, 1)] {
            let points = format!(
                r#"{{"step":{a},"loss":1,"elapsed_s":1}},{{"step":{b},"loss":1,"elapsed_s":1}}"#
            );
            let e = check_points(&metrics_report(&points).metrics).unwrap_err();
            assert_eq!(
                (e.code, &e.details["field"]),
                (ErrorCode::InvalidMetric, &serde_json::json!("step"))
            );
        }
    }

    #[test]
    fn metrics_lines_are_points_and_nothing_else() {
        let r = parse_metric_lines(b"{\"step\":1,\"loss\":2,\"elapsed_s\":1}\n\n{\"step\":2,\"loss\":1.5,\"elapsed_s\":2}\n").unwrap();
        assert_eq!(
            (r.state, r.message.clone(), r.metrics.len()),
            (None, None, 2)
        );
        assert!(check_points(&r.metrics).is_ok());
        for body in [
            &br#"{"step":1,"loss":2,"elapsed_s":1}],"state":"succeeded","metrics":[{"step":2,"loss":1,"elapsed_s":1}"#[..],
            br#"{"step":1,"loss":2,"elapsed_s":1,"message":"forged"}"#,
            br#"{"state":"succeeded"}"#,
            br#"[{"step":1,"loss":2,"elapsed_s":1}]"#,
        ] {
            let e = parse_metric_lines(body).unwrap_err();
            assert_eq!((e.status, e.details["line"].as_u64()), (400, Some(1)), "{e:?}");
        }
        assert!(parse_metric_lines(b"").unwrap().metrics.is_empty());
    }
}
