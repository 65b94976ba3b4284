//! The loss curve's geometry: from metric points to SVG path data and labelled axis ticks.
//! Pure, so the scaling is tested natively; the component only draws what this computes.

use crate::api_wire::MetricPoint;

/// The drawing area inside the SVG's `viewBox` (the rest is room for the tick labels).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    /// The frame used by the app: 600×260 with margins for labels.
    pub const STANDARD: Frame = Frame {
        width: 600.0,
        height: 260.0,
        left: 52.0,
        right: 588.0,
        top: 12.0,
        bottom: 222.0,
    };
}

/// One tick: where it sits (in viewBox units along its axis) and its label.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub at: f64,
    pub label: String,
}

/// Everything the plot draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub frame: Frame,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    /// SVG path data of the training loss, `M x y L x y …`; empty when there is no point.
    pub train: String,
    /// The same for the validation loss (only the steps that measured it).
    pub val: String,
    pub train_points: usize,
    pub val_points: usize,
}

/// Up to about `count` round tick values (1, 2 or 5 times a power of ten) covering `lo..=hi`.
pub fn nice_ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || count == 0 {
        return Vec::new();
    }
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.5, lo + 0.5)
    };
    let raw = (hi - lo) / count as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A tick label with no more decimals than the step needs.
fn label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

/// The chart of `points` in `frame`, or `None` when there is nothing to draw.
pub fn loss_chart(points: &[MetricPoint], frame: Frame) -> Option<Chart> {
    let finite = |v: f64| v.is_finite().then_some(v);
    let train: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.step as f64, finite(p.loss)?)))
        .collect();
    let val: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.step as f64, finite(p.val_loss?)?)))
        .collect();
    if train.is_empty() && val.is_empty() {
        return None;
    }
    let all = || train.iter().chain(&val);
    let fold = |f: fn(f64, f64) -> f64, init: f64, pick: fn(&(f64, f64)) -> f64| {
        all().map(pick).fold(init, f)
    };
    let (x_lo, x_hi) = (
        fold(f64::min, f64::INFINITY, |p| p.0),
        fold(f64::max, f64::NEG_INFINITY, |p| p.0),
    );
    let (y_lo, y_hi) = (
        fold(f64::min, f64::INFINITY, |p| p.1),
        fold(f64::max, f64::NEG_INFINITY, |p| p.1),
    );
    // The axes start at whole ticks around the data so that the curve never touches the frame.
    let x_ticks = nice_ticks(x_lo.min(0.0), x_hi.max(x_lo + 1.0), 6);
    let y_ticks = nice_ticks(y_lo, y_hi, 5);
    let step_of = |t: &[f64]| if t.len() > 1 { t[1] - t[0] } else { 1.0 };
    let (x_step, y_step) = (step_of(&x_ticks), step_of(&y_ticks));
    let x_min = x_ticks.first().copied().unwrap_or(x_lo).min(x_lo);
    let x_max = x_ticks.last().copied().unwrap_or(x_hi).max(x_hi);
    let y_min = (y_ticks.first().copied().unwrap_or(y_lo) - y_step).min(y_lo);
    let y_max = (y_ticks.last().copied().unwrap_or(y_hi) + y_step).max(y_hi);
    let span = |a: f64, b: f64| if b > a { b - a } else { 1.0 };
    let sx = |x: f64| frame.left + (x - x_min) / span(x_min, x_max) * (frame.right - frame.left);
    let sy = |y: f64| frame.bottom - (y - y_min) / span(y_min, y_max) * (frame.bottom - frame.top);
    let path = |pts: &[(f64, f64)]| {
        pts.iter()
            .enumerate()
            .map(|(i, (x, y))| {
                format!(
                    "{}{:.1} {:.1}",
                    if i == 0 { "M" } else { " L" },
                    sx(*x),
                    sy(*y)
                )
            })
            .collect::<String>()
    };
    Some(Chart {
        frame,
        x_ticks: x_ticks
            .iter()
            .map(|v| Tick {
                at: sx(*v),
                label: label(*v, x_step),
            })
            .collect(),
        y_ticks: y_ticks
            .iter()
            .filter(|v| (y_min..=y_max).contains(*v))
            .map(|v| Tick {
                at: sy(*v),
                label: label(*v, y_step),
            })
            .collect(),
        train: path(&train),
        val: path(&val),
        train_points: train.len(),
        val_points: val.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(step: u64, loss: f64, val: Option<f64>) -> MetricPoint {
        MetricPoint {
            step,
            loss,
            val_loss: val,
            lr: None,
            tokens_per_s: None,
            elapsed_s: 0.0,
            grad_norm: None,
            epoch: None,
            peak_mem_bytes: None,
        }
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(
            nice_ticks(0.0, 30.0, 6),
            vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
        );
        let fine: Vec<String> = nice_ticks(2.13, 2.91, 5)
            .iter()
            .map(|v| label(*v, 0.2))
            .collect();
        assert_eq!(fine, vec!["2.2", "2.4", "2.6", "2.8"]);
        assert_eq!(
            nice_ticks(0.0, 200.0, 6),
            vec![0.0, 50.0, 100.0, 150.0, 200.0]
        );
        // A flat series still gets an axis.
        assert!(!nice_ticks(3.0, 3.0, 5).is_empty());
        assert!(nice_ticks(f64::NAN, 1.0, 5).is_empty());
    }

    #[test]
    fn draws_nothing_without_points() {
        assert_eq!(loss_chart(&[], Frame::STANDARD), None);
        assert_eq!(loss_chart(&[p(1, f64::NAN, None)], Frame::STANDARD), None);
    }

    #[test]
    fn every_point_lands_inside_the_frame_with_falling_loss_going_down() {
        let pts: Vec<MetricPoint> = (1..=30)
            .map(|s| {
                p(
                    s,
                    6.0 - s as f64 * 0.1,
                    (s % 10 == 0).then_some(6.1 - s as f64 * 0.1),
                )
            })
            .collect();
        let f = Frame::STANDARD;
        let c = loss_chart(&pts, f).unwrap();
        assert_eq!((c.train_points, c.val_points), (30, 3));
        let coords: Vec<(f64, f64)> = c
            .train
            .split(['M', 'L'])
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                let mut it = s.split_whitespace().map(|n| n.parse::<f64>().unwrap());
                (it.next().unwrap(), it.next().unwrap())
            })
            .collect();
        assert_eq!(coords.len(), 30);
        for (x, y) in &coords {
            assert!(
                (f.left..=f.right).contains(x) && (f.top..=f.bottom).contains(y),
                "{x} {y}"
            );
        }
        // Screen y grows downwards: a falling loss rises in y.
        assert!(coords[29].1 > coords[0].1);
        assert!(coords[29].0 > coords[0].0);
        assert!(c.val.starts_with('M') && c.val.matches('L').count() == 2);
        assert_eq!(c.x_ticks.first().unwrap().label, "0");
        assert!(c.y_ticks.iter().all(|t| (f.top..=f.bottom).contains(&t.at)));
        let labels: Vec<&str> = c.y_ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, vec!["3", "4", "5"]);
    }

    #[test]
    fn a_single_point_is_drawn() {
        let c = loss_chart(&[p(5, 2.0, None)], Frame::STANDARD).unwrap();
        assert_eq!(c.train_points, 1);
        assert!(c.train.starts_with('M') && !c.train.contains('L'));
    }
}
