//! The loss curve as an SVG plot: train and validation loss against the step, with labelled
//! axes and a legend, a CSV download, and the same numbers as a table for screen readers. The
//! geometry comes from `plot.rs`; this only draws it.

use crate::api_wire::MetricPoint;
use crate::i18n::Key;
use crate::plot::{Frame, Tick, loss_chart};
use crate::progress::{csv_data_url, metrics_csv};
use crate::state::{I18n, use_i18n};
use leptos::prelude::*;

#[component]
pub fn LossChart(#[prop(into)] points: Signal<Vec<MetricPoint>>) -> impl IntoView {
    let i = use_i18n();
    let chart = Memo::new(move |_| points.with(|p| loss_chart(p, Frame::STANDARD)));
    move || match chart.get() {
        None => crate::pages::bits::note(i, Key::NoMetricsYet, "muted", "loss-chart-empty"),
        Some(c) => {
            let f = c.frame;
            let label = format!(
                "{}: {} {} · {} {}",
                i.t(Key::LossCurve),
                c.train_points,
                i.t(Key::TrainLoss),
                c.val_points,
                i.t(Key::ValLoss)
            );
            view! {
                <figure class="chart">
                    <svg data-testid="loss-chart" data-train-points=c.train_points data-val-points=c.val_points
                        viewBox=format!("0 0 {} {}", f.width, f.height) role="img" aria-label=label>
                        {axes(i, f, &c.x_ticks, &c.y_ticks, Key::Step)}
                        <path class="train" data-testid="loss-train" d=c.train.clone()></path>
                        <path class="val" data-testid="loss-val" d=c.val.clone()></path>
                    </svg>
                    <figcaption class="legend">
                        <span><i class="swatch train"></i>{i.t(Key::TrainLoss)}</span>
                        <span><i class="swatch val"></i>{i.t(Key::ValLoss)}</span>
                        <a data-testid="loss-csv" download="metrics.csv"
                            href=move || points.with(|p| csv_data_url(&metrics_csv(p)))>{i.t(Key::DownloadCsv)}</a>
                    </figcaption>
                </figure>
                <LossTable points=points/>
            }
            .into_any()
        }
    }
}

/// The grid, ticks, frame and axis labels of a loss plot in `f` (the loss chart's and the
/// comparison's), the x axis labelled `x_label`.
pub fn axes(i: I18n, f: Frame, x_ticks: &[Tick], y_ticks: &[Tick], x_label: Key) -> AnyView {
    view! {
        <g class="grid">
            {y_ticks.iter().map(|t| view! {
                <line x1=f.left x2=f.right y1=t.at y2=t.at></line>
                <text x=f.left - 6.0 y=t.at + 4.0 text-anchor="end">{t.label.clone()}</text>
            }).collect_view()}
            {x_ticks.iter().map(|t| view! {
                <line x1=t.at x2=t.at y1=f.bottom y2=f.bottom + 5.0></line>
                <text x=t.at y=f.bottom + 18.0 text-anchor="middle">{t.label.clone()}</text>
            }).collect_view()}
        </g>
        <rect class="frame" x=f.left y=f.top width=f.right - f.left height=f.bottom - f.top></rect>
        <text class="axis" x=(f.left + f.right) / 2.0 y=f.height - 4.0 text-anchor="middle">{i.t(x_label)}</text>
        <text class="axis" x="12" y=(f.top + f.bottom) / 2.0 text-anchor="middle"
            transform=format!("rotate(-90 12 {})", (f.top + f.bottom) / 2.0)>{i.t(Key::Loss)}</text>
    }
    .into_any()
}

/// The curve's numbers as a table for screen readers (the SVG is one image to them).
#[component]
fn LossTable(points: Signal<Vec<MetricPoint>>) -> impl IntoView {
    let i = use_i18n();
    let cell = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into());
    view! {
        <table class="sr-only" data-testid="loss-table">
            <caption>{i.t(Key::LossTableCaption)}</caption>
            <thead><tr>
                <th scope="col">{i.t(Key::Step)}</th>
                <th scope="col">{i.t(Key::TrainLoss)}</th>
                <th scope="col">{i.t(Key::ValLoss)}</th>
                <th scope="col">{i.t(Key::ElapsedSeconds)}</th>
            </tr></thead>
            <tbody>
                {move || points.with(|ps| ps.iter().map(|p| view! {
                    <tr>
                        <th scope="row">{p.step}</th>
                        <td>{cell(Some(p.loss))}</td>
                        <td>{cell(p.val_loss)}</td>
                        <td>{format!("{:.1}", p.elapsed_s)}</td>
                    </tr>
                }).collect_view())}
            </tbody>
        </table>
    }
}
