//! The comparison's SVG charts (plotters, SVG backend only): the uncontended
//! cycle's latency distribution, handoffs per second by session count, and a
//! herd's drain over time.

use super::peer::Library;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What the sections keep for the charts.
#[derive(Default)]
pub struct ChartData {
    /// Every uncontended loopback cycle, all rounds.
    pub cycles: BTreeMap<Library, Vec<Duration>>,
    /// Handoffs/s per round, by library and session count.
    pub handoffs: BTreeMap<(Library, usize), Vec<f64>>,
    /// When each waiter held, after the first release (one round).
    pub drain: BTreeMap<Library, Vec<Duration>>,
}

fn color(lib: Library) -> RGBColor {
    match lib {
        Library::Zklock => RGBColor(213, 62, 79),
        Library::Floor => RGBColor(120, 120, 120),
        Library::Recipe => RGBColor(102, 166, 30),
        Library::Curator => RGBColor(50, 136, 189),
        Library::Kazoo => RGBColor(244, 165, 30),
    }
}

type Result = std::result::Result<(), Box<dyn std::error::Error>>;

/// A white 760x440 SVG canvas at `path`.
fn canvas(
    path: &Path,
) -> std::result::Result<DrawingArea<SVGBackend<'_>, Shift>, Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (760, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    Ok(root)
}

/// A chart with `caption` on `root`.
fn titled<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64);
    builder
}

/// One library's line, with its legend entry.
fn line<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    points: Vec<CT::From>,
    lib: Library,
    name: String,
) -> Result
where
    CT: CoordTranslate,
    CT::From: Clone + 'static,
{
    let c = color(lib);
    chart
        .draw_series(LineSeries::new(points, c.stroke_width(2)))?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    Ok(())
}

/// The legend at `position`, then the file.
fn finish<'a, CT: CoordTranslate>(
    mut chart: ChartContext<'a, SVGBackend<'a>, CT>,
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    position: SeriesLabelPosition,
) -> Result {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Writes the charts into `dir`; returns the file names written.
pub fn write(data: &ChartData, dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir).expect("charts dir");
    let name = |lib: Library| lib.label().replace('`', "");
    let mut written = Vec::new();
    let mut draw = |file: &str, result: Result| match result {
        Ok(()) => written.push(file.to_owned()),
        Err(e) => eprintln!("chart {file}: {e}"),
    };
    if !data.cycles.is_empty() {
        let file = "uncontended-cycle.svg";
        draw(file, cycle_cdf(data, &name, &dir.join(file)));
    }
    if !data.handoffs.is_empty() {
        let file = "handoffs.svg";
        draw(file, handoffs(data, &name, &dir.join(file)));
    }
    if !data.drain.is_empty() {
        let file = "herd-drain.svg";
        draw(file, drain(data, &name, &dir.join(file)));
    }
    written
}

fn ms(d: &Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn cycle_cdf(data: &ChartData, name: &dyn Fn(Library) -> String, path: &Path) -> Result {
    let all: Vec<f64> = data.cycles.values().flatten().map(ms).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).max(0.01) * 0.9;
    let mut sorted = all.clone();
    sorted.sort_by(f64::total_cmp);
    let hi = sorted[((sorted.len() - 1) as f64 * 0.995) as usize] * 1.1;
    let root = canvas(path)?;
    let mut chart = titled(&root, "Uncontended lock + release cycle on loopback")
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("cycle time (ms, log scale)")
        .y_desc("fraction of cycles at most")
        .draw()?;
    for (lib, samples) in &data.cycles {
        let mut v: Vec<f64> = samples.iter().map(ms).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let points: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .filter(|(_, x)| **x <= hi)
            .map(|(i, x)| (*x, (i + 1) as f64 / n))
            .collect();
        line(&mut chart, points, *lib, name(*lib))?;
    }
    finish(chart, &root, SeriesLabelPosition::LowerRight)
}

fn handoffs(data: &ChartData, name: &dyn Fn(Library) -> String, path: &Path) -> Result {
    let mut by_lib: BTreeMap<Library, Vec<(f64, f64)>> = BTreeMap::new();
    for ((lib, sessions), v) in &data.handoffs {
        let med = lock_testkit::measure::median(v);
        by_lib
            .entry(*lib)
            .or_default()
            .push((*sessions as f64, med));
    }
    let max_y = by_lib.values().flatten().map(|p| p.1).fold(0.0, f64::max) * 1.15;
    let max_x = by_lib.values().flatten().map(|p| p.0).fold(0.0, f64::max) + 1.0;
    let root = canvas(path)?;
    let mut chart = titled(&root, "Handoffs per second on one lock, 3-node ensemble")
        .build_cartesian_2d(1.0..max_x, 0.0..max_y)?;
    chart
        .configure_mesh()
        .x_desc("sessions contending")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("handoffs / s (median of rounds)")
        .draw()?;
    for (lib, mut points) in by_lib {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let c = color(lib);
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
        line(&mut chart, points, lib, name(lib))?;
    }
    finish(chart, &root, SeriesLabelPosition::LowerRight)
}

fn drain(data: &ChartData, name: &dyn Fn(Library) -> String, path: &Path) -> Result {
    let max_x = data.drain.values().flatten().map(ms).fold(0.0, f64::max) * 1.05;
    let max_y = data.drain.values().map(Vec::len).max().unwrap_or(1) as f64 * 1.05;
    let root = canvas(path)?;
    let mut chart = titled(
        &root,
        "Herd drain: queued waiters served after the holder's release",
    )
    .build_cartesian_2d(0.0..max_x.max(1.0), 0.0..max_y)?;
    chart
        .configure_mesh()
        .x_desc("time since the holder's release (ms)")
        .y_desc("waiters that have held the lock")
        .draw()?;
    for (lib, done) in &data.drain {
        let points: Vec<(f64, f64)> = std::iter::once((0.0, 0.0))
            .chain(
                done.iter()
                    .enumerate()
                    .map(|(i, d)| (ms(d), (i + 1) as f64)),
            )
            .collect();
        line(&mut chart, points, *lib, name(*lib))?;
    }
    finish(chart, &root, SeriesLabelPosition::LowerRight)
}
