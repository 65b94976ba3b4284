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

/// The most ticks one axis gets, whatever the range: a range the step cannot divide sensibly
/// (a span near the smallest float, or one so wide it overflows) gets none rather than millions.
const MAX_TICKS: usize = 50;

/// Up to about `count` round tick values (1, 2 or 5 times a power of ten) covering `lo..=hi`.
/// Any finite range gets at most [`MAX_TICKS`] ticks (none when no round step fits it).
pub fn nice_ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || count == 0 {
        return Vec::new();
    }
    // A range too narrow for its own magnitude (a flat series, or two values a few ulps apart)
    // is widened around its value, by half a unit or a twentieth of the value, whichever is more.
    let scale = lo.abs().max(hi.abs());
    let (lo, hi) = if hi - lo > scale * 1e-9 && hi - lo > 1e-300 {
        (lo, hi)
    } else {
        let half = (scale * 0.05).max(0.5);
        (lo - half, lo + half)
    };
    let raw = (hi - lo) / count as f64;
    let power = 10f64.powf(raw.log10().floor());
    if !(raw.is_normal() && power.is_normal()) {
        return Vec::new();
    }
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    let (first, last) = ((lo / step).ceil(), (hi / step).floor());
    if !(first.is_finite() && last.is_finite()) || last < first || last - first >= MAX_TICKS as f64
    {
        return Vec::new();
    }
    (0..=(last - first) as usize)
        .map(|i| (first + i as f64) * step)
        .collect()
}

/// A tick label with no more decimals than the step needs; steps below 0.0001 or of ten million
/// and more are written in scientific notation.
fn label(v: f64, step: f64) -> String {
    if !(1e-4..1e7).contains(&step.abs()) {
        return format!("{v:.2e}");
    }
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

/// Where `v` lands between `from` and `to` when `lo..=hi` spans them: always inside, whatever
/// the numbers (an overflowing span or a NaN lands on an edge, never off the frame).
fn place(v: f64, lo: f64, hi: f64, from: f64, to: f64) -> f64 {
    let span = hi - lo;
    let t = if span.is_finite() && span > 0.0 {
        (v - lo) / span
    } else {
        // Too wide to subtract: place by halves, which cannot overflow.
        let (h_lo, h_hi, h_v) = (lo / 2.0, hi / 2.0, v / 2.0);
        let half_span = h_hi - h_lo;
        if half_span.is_finite() && half_span > 0.0 {
            (h_v - h_lo) / half_span
        } else {
            0.0
        }
    };
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    from + t * (to - from)
}

/// One run's curves: `(x, loss)` of its training loss and of its validation loss.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub train: Vec<(f64, f64)>,
    pub val: Vec<(f64, f64)>,
}

impl Series {
    /// The finite losses of `points`, against their step times `x_per_step` (1 for the step
    /// itself; the tokens a step trains to align runs by tokens).
    pub fn of(points: &[MetricPoint], x_per_step: f64) -> Series {
        let finite = |v: f64| v.is_finite().then_some(v);
        let x = |step: u64| step as f64 * x_per_step;
        Series {
            train: points
                .iter()
                .filter_map(|p| Some((x(p.step), finite(p.loss)?)))
                .collect(),
            val: points
                .iter()
                .filter_map(|p| Some((x(p.step), finite(p.val_loss?)?)))
                .collect(),
        }
    }
}

/// One run's paths in an overlay.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPaths {
    /// SVG path data of the training loss, `M x y L x y …`; empty when there is no point.
    pub train: String,
    /// The same for the validation loss (only the steps that measured it).
    pub val: String,
    pub train_points: usize,
    pub val_points: usize,
}

/// Several runs' curves on shared axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Overlay {
    pub frame: Frame,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    /// One per series, in their order.
    pub runs: Vec<RunPaths>,
}

/// The chart of `points` in `frame`, or `None` when there is nothing to draw.
pub fn loss_chart(points: &[MetricPoint], frame: Frame) -> Option<Chart> {
    let o = overlay_chart(&[Series::of(points, 1.0)], frame)?;
    let run = o.runs.into_iter().next()?;
    Some(Chart {
        frame,
        x_ticks: o.x_ticks,
        y_ticks: o.y_ticks,
        train: run.train,
        val: run.val,
        train_points: run.train_points,
        val_points: run.val_points,
    })
}

/// Every series on one pair of axes that covers them all (non-finite coordinates are left
/// out), or `None` when none has a point.
pub fn overlay_chart(series: &[Series], frame: Frame) -> Option<Overlay> {
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let series: Vec<Series> = series
        .iter()
        .map(|s| Series {
            train: s.train.iter().filter(finite).copied().collect(),
            val: s.val.iter().filter(finite).copied().collect(),
        })
        .collect();
    let all = || series.iter().flat_map(|s| s.train.iter().chain(&s.val));
    all().next()?;
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
    let sx = |x: f64| place(x, x_min, x_max, frame.left, frame.right);
    let sy = |y: f64| place(y, y_min, y_max, frame.bottom, frame.top);
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
    Some(Overlay {
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
        runs: series
            .iter()
            .map(|s| RunPaths {
                train: path(&s.train),
                val: path(&s.val),
                train_points: s.train.len(),
                val_points: s.val.len(),
            })
            .collect(),
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

    /// Every coordinate of a path, as `(x, y)`.
    fn coords(path: &str) -> Vec<(f64, f64)> {
        path.split(['M', 'L'])
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                let mut it = s.split_whitespace().map(|n| n.parse::<f64>().unwrap());
                (it.next().unwrap(), it.next().unwrap())
            })
            .collect()
    }

    /// The chart of `points` is drawn, every coordinate and tick inside the frame.
    pub(crate) fn assert_drawable(points: &[MetricPoint]) {
        let f = Frame::STANDARD;
        let Some(c) = loss_chart(points, f) else {
            return;
        };
        assert!(c.x_ticks.len() <= MAX_TICKS && c.y_ticks.len() <= MAX_TICKS);
        for (x, y) in coords(&c.train).into_iter().chain(coords(&c.val)) {
            assert!(
                (f.left..=f.right).contains(&x) && (f.top..=f.bottom).contains(&y),
                "{x} {y} for {points:?}"
            );
        }
        for t in &c.x_ticks {
            assert!((f.left..=f.right).contains(&t.at), "{t:?}");
        }
        for t in &c.y_ticks {
            assert!((f.top..=f.bottom).contains(&t.at), "{t:?}");
        }
    }

    /// What a job once reported, which panicked the app on every page that showed it: a step
    /// that underflowed to 0 and a tick range that overflowed.
    #[test]
    fn extreme_series_are_drawn_without_a_panic() {
        let tiny = 2.5e-323;
        for series in [
            vec![p(1, 0.0, None), p(2, tiny, None)],
            vec![p(1, tiny, Some(0.0)), p(u64::MAX, tiny, None)],
            vec![p(0, f64::MAX, None), p(1, -f64::MAX, None)],
            vec![p(1, 1e300, None), p(2, 1e300 * (1.0 + f64::EPSILON), None)],
            vec![p(1, f64::MIN_POSITIVE, None)],
            vec![p(1, 1e-310, None), p(2, -1e-310, None)],
            vec![p(5, 3.0, None), p(5, 3.0, None)],
        ] {
            assert_drawable(&series);
        }
        assert!(nice_ticks(0.0, tiny, 5).len() <= MAX_TICKS);
        assert!(nice_ticks(-f64::MAX, f64::MAX, 5).len() <= MAX_TICKS);
    }

    // Natively; the same property runs in the browser's wasm in `tests/web.rs`.
    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Any finite numbers: random ones, and ones from the ends of the float range.
        #[test]
        fn any_finite_series_is_drawn_inside_the_frame(
            points in proptest::collection::vec(
                (
                    proptest::prop_oneof![0..100u64, proptest::num::u64::ANY],
                    proptest::prop_oneof![
                        -10.0..10.0f64,
                        proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO,
                    ],
                    proptest::option::of(proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL),
                ),
                0..40,
            ),
        ) {
            let points: Vec<MetricPoint> = points.into_iter().map(|(s, l, v)| p(s, l, v)).collect();
            assert_drawable(&points);
        }
    }

    #[test]
    fn runs_overlaid_share_one_pair_of_axes() {
        let a: Vec<MetricPoint> = (1..=10).map(|s| p(s, 4.0 - s as f64 * 0.1, None)).collect();
        let b: Vec<MetricPoint> = (1..=20).map(|s| p(s, 2.0, Some(2.5))).collect();
        let o =
            overlay_chart(&[Series::of(&a, 1.0), Series::of(&b, 1.0)], Frame::STANDARD).unwrap();
        assert_eq!(o.runs.len(), 2);
        assert_eq!((o.runs[0].train_points, o.runs[1].val_points), (10, 20));
        // The shorter run ends halfway along the x axis the longer one spans.
        let end_a = coords(&o.runs[0].train).last().unwrap().0;
        let end_b = coords(&o.runs[1].train).last().unwrap().0;
        assert!(end_a < end_b, "{end_a} {end_b}");
        // By tokens, a run that trains twice the tokens a step ends where 20 steps of the other do.
        let o =
            overlay_chart(&[Series::of(&a, 2.0), Series::of(&b, 1.0)], Frame::STANDARD).unwrap();
        let ends: Vec<f64> = o
            .runs
            .iter()
            .map(|r| coords(&r.train).last().unwrap().0)
            .collect();
        assert_eq!(ends[0], ends[1]);
        assert_eq!(overlay_chart(&[Series::default()], Frame::STANDARD), None);
    }

    #[test]
    fn a_single_point_is_drawn() {
        let c = loss_chart(&[p(5, 2.0, None)], Frame::STANDARD).unwrap();
        assert_eq!(c.train_points, 1);
        assert!(c.train.starts_with('M') && !c.train.contains('L'));
    }
}
