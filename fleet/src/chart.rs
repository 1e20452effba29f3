//! BENCHMARKS.md's fleet chart (plotters, SVG): grant and handoff latency
//! against the number of sessions, and the packets per second the leader and a
//! follower receive.

use crate::case::CaseResult;
use plotters::prelude::*;
use std::path::Path;

type Result = std::result::Result<(), Box<dyn std::error::Error>>;

/// One series: its name, colour and points.
struct Series {
    name: &'static str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

/// Writes the chart of the zklock fleet cases without a restart to `path`.
pub fn write(results: &[CaseResult], path: &Path) -> Result {
    let mut cases: Vec<&CaseResult> = results
        .iter()
        .filter(|r| {
            r.config.workload.library == "zklock"
                && !r.config.rolling_restart
                && r.config.workload.mode == crate::Mode::Fleet
        })
        .collect();
    cases.sort_by_key(|r| r.config.sessions);
    if cases.is_empty() {
        return Ok(());
    }
    let n = |r: &CaseResult| r.config.sessions as f64;
    let ms = |d: std::time::Duration| (d.as_secs_f64() * 1000.0).max(0.01);
    let series = |name, color, y: &dyn Fn(&CaseResult) -> f64| Series {
        name,
        color,
        points: cases.iter().map(|r| (n(r), y(r))).collect(),
    };
    let latency = [
        series("grant p50 (cold locks)", RGBColor(213, 62, 79), &|r| {
            ms(r.figures.cold_grant.p50)
        }),
        series("grant p99 (cold locks)", RGBColor(244, 109, 67), &|r| {
            ms(r.figures.cold_grant.p99)
        }),
        series("handoff p50 (hot locks)", RGBColor(50, 136, 189), &|r| {
            ms(r.figures.handoff.p50)
        }),
        series("handoff p99 (hot locks)", RGBColor(102, 194, 165), &|r| {
            ms(r.figures.handoff.p99)
        }),
    ];
    let load = [
        series("leader", RGBColor(213, 62, 79), &|r| r.leader_rps.max(1.0)),
        series("follower (mean)", RGBColor(50, 136, 189), &|r| {
            r.follower_rps.max(1.0)
        }),
    ];
    let x_min = n(cases[0]) / 2.0;
    let x_max = n(cases[cases.len() - 1]) * 2.0;
    let root = SVGBackend::new(path, (1000, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(500);
    panel(
        &left,
        "Latency against sessions",
        "ms (log)",
        (x_min, x_max),
        &latency,
    )?;
    panel(
        &right,
        "Packets received per second",
        "packets/s (log)",
        (x_min, x_max),
        &load,
    )?;
    root.present()?;
    Ok(())
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    x: (f64, f64),
    series: &[Series],
) -> Result {
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((x.0..x.1).log_scale(), (lo / 2.0..hi * 2.0).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("sessions (log)")
        .y_desc(y_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| {
            if *v >= 10.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .draw()?;
    for s in series {
        let c = s.color;
        chart
            .draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2)))?
            .label(s.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
