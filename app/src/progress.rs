//! How far a job has got, from the metrics the job page already polls: step of total, the
//! fraction done, an ETA from the recent pace and tokens/s; and the loss curve's points as CSV
//! (the download and the screen readers' table read the same numbers). Pure, tested natively.

use crate::api_wire::MetricPoint;

/// A running job's progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub step: u64,
    pub total_steps: u64,
    /// `step / total_steps`, within 0..=1.
    pub fraction: f64,
    /// Seconds left at the pace of the reported steps; `None` until two points show a pace.
    pub eta_s: Option<f64>,
    /// The latest reported throughput.
    pub tokens_per_s: Option<f64>,
}

/// Progress from the metric points so far and the spec's step count (`None` without points or
/// without a known total).
pub fn progress(points: &[MetricPoint], total_steps: u64) -> Option<Progress> {
    let last = points.last()?;
    if total_steps == 0 {
        return None;
    }
    let step = last.step.min(total_steps);
    // The pace over the points reported so far, leaving out the time before the first one
    // (loading the model and the data), which says nothing about the steps to come.
    let first = points.first()?;
    let (steps, secs) = (
        last.step.saturating_sub(first.step) as f64,
        last.elapsed_s - first.elapsed_s,
    );
    let eta_s = (steps > 0.0 && secs > 0.0).then(|| (total_steps - step) as f64 * secs / steps);
    let tokens_per_s = points
        .iter()
        .rev()
        .find_map(|p| p.tokens_per_s)
        .filter(|t| t.is_finite() && *t >= 0.0);
    Some(Progress {
        step,
        total_steps,
        fraction: step as f64 / total_steps as f64,
        eta_s,
        tokens_per_s,
    })
}

/// The points as CSV: `step,loss,val_loss,tokens_per_s,elapsed_s`, empty cells where a value
/// was not reported.
pub fn metrics_csv(points: &[MetricPoint]) -> String {
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let mut out = String::from("step,loss,val_loss,tokens_per_s,elapsed_s\n");
    for p in points {
        out.push_str(&format!(
            "{},{},{},{},{}\n",
            p.step,
            p.loss,
            opt(p.val_loss),
            opt(p.tokens_per_s),
            p.elapsed_s
        ));
    }
    out
}

/// A `data:` URL that downloads `csv` (percent-encoded, so any text is safe in an `href`).
pub fn csv_data_url(csv: &str) -> String {
    let mut out = String::from("data:text/csv;charset=utf-8,");
    for b in csv.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~,".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(step: u64, elapsed_s: f64, tps: Option<f64>) -> MetricPoint {
        MetricPoint {
            step,
            loss: 2.5,
            val_loss: None,
            lr: None,
            tokens_per_s: tps,
            elapsed_s,
            grad_norm: None,
            epoch: None,
            peak_mem_bytes: None,
        }
    }

    #[test]
    fn step_of_total_and_an_eta_from_the_pace_after_start_up() {
        // 30 s of start-up before step 10; then 10 steps every 5 s.
        let points = [
            point(10, 30.0, Some(900.0)),
            point(20, 35.0, Some(1000.0)),
            point(30, 40.0, None),
        ];
        let p = progress(&points, 200).unwrap();
        assert_eq!((p.step, p.total_steps), (30, 200));
        assert!((p.fraction - 0.15).abs() < 1e-12);
        // 170 steps left at 2 steps/s.
        assert_eq!(p.eta_s, Some(85.0));
        // The latest reported throughput, even when the last point has none.
        assert_eq!(p.tokens_per_s, Some(1000.0));
    }

    #[test]
    fn no_eta_before_a_pace_and_nothing_without_points_or_total() {
        let one = [point(10, 30.0, None)];
        let p = progress(&one, 100).unwrap();
        assert_eq!((p.eta_s, p.tokens_per_s), (None, None));
        assert_eq!(progress(&[], 100), None);
        assert_eq!(progress(&one, 0), None);
        // A job that reports past its total is done, not over 100%.
        let over = [point(1, 1.0, None), point(120, 2.0, None)];
        let p = progress(&over, 100).unwrap();
        assert_eq!((p.step, p.fraction, p.eta_s), (100, 1.0, Some(0.0)));
    }

    #[test]
    fn csv_has_a_header_and_empty_cells_for_missing_values() {
        let mut a = point(10, 3.5, Some(1234.5));
        a.val_loss = Some(2.25);
        let csv = metrics_csv(&[a, point(20, 7.0, None)]);
        assert_eq!(
            csv,
            "step,loss,val_loss,tokens_per_s,elapsed_s\n10,2.5,2.25,1234.5,3.5\n20,2.5,,,7\n"
        );
        let url = csv_data_url("a,b\n1,2\n");
        assert_eq!(url, "data:text/csv;charset=utf-8,a,b%0A1,2%0A");
    }
}
