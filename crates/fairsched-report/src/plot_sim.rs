//! SVG charts of `simulate` runs (plotters, SVG backend, no font files;
//! the house style of [`crate::plot`]): the Gantt chart of a window, step
//! functions over time with a chosen y range, and lines over time (solid
//! or dashed). Each function returns the SVG document as a string.

use plotters::prelude::*;

/// Ten categorical colours (Tableau 10 with its red made indigo: red
/// marks lost work), for users, organizations or policies.
pub const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (57, 59, 121),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (188, 189, 34),
    (23, 190, 207),
    (127, 127, 127),
];

/// The colour of everything outside the named groups.
pub const OTHER: (u8, u8, u8) = (205, 205, 205);

/// The outline of stopped work.
const STOPPED: RGBColor = RGBColor(200, 0, 0);

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn err(e: impl std::fmt::Display) -> String {
    format!("chart: {e}")
}

/// A tick label: whole numbers without decimals, others with at most 4
/// significant digits.
pub fn tick(x: f64) -> String {
    if !x.is_finite() {
        return String::new();
    }
    if (x - x.round()).abs() < 1e-9 * x.abs().max(1.0) && x.abs() < 1e15 {
        format!("{:.0}", x.round())
    } else {
        let s = format!("{:.4}", x);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

/// One rectangle of a Gantt chart: a run over rows `[y0, y1)` (processor
/// slots) from `x0` to `x1`, coloured as `legend[group]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GanttBar {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
    pub group: usize,
    /// Work lost: outlined in red and struck through.
    pub stopped: bool,
}

/// A Gantt chart.
pub struct Gantt<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x_range: (f64, f64),
    /// Rows from 0 to this (every machine's slots, stacked).
    pub rows: f64,
    /// With several machines: the first row of each and its name, drawn
    /// as a line across with the name.
    pub machines: &'a [(f64, String)],
    /// Names and colours of the groups; bars index it.
    pub legend: &'a [(String, (u8, u8, u8))],
    /// What a red outline means, in the legend (none: no entry).
    pub stopped_label: Option<&'a str>,
    pub bars: &'a [GanttBar],
}

/// Width of a Gantt chart's legend column, pixels.
const LEGEND_W: i32 = 210;

/// The Gantt chart: one filled rectangle per bar (at least a pixel each
/// way, so that a one-processor run among thousands stays visible),
/// stopped work outlined in red with a diagonal stroke, and the legend in
/// a column on the right.
pub fn gantt(g: &Gantt) -> Result<String, String> {
    let mut svg = String::new();
    {
        let (w, h) = (1100u32, 500u32);
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot, side) = root.split_horizontally(w as i32 - LEGEND_W);
        let (x0, x1) = if g.x_range.1 > g.x_range.0 {
            g.x_range
        } else {
            (g.x_range.0, g.x_range.0 + 1.0)
        };
        let rows = g.rows.max(1.0);
        let mut chart = ChartBuilder::on(&plot)
            .caption(g.title, ("sans-serif", 18))
            .margin(12)
            .margin_right(30)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, 0.0..rows)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(g.x_label)
            .y_desc(g.y_label)
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|y| tick(*y))
            .draw()
            .map_err(err)?;
        // At least a pixel and a bit each way (the backend rounds to whole
        // pixels: a one-processor run among thousands would vanish).
        let (pw, ph) = chart.plotting_area().dim_in_pixel();
        let min_w = 1.2 * (x1 - x0) / f64::from(pw.max(1));
        let min_h = 1.2 * rows / f64::from(ph.max(1));
        for b in g.bars {
            let c = rgb(g.legend.get(b.group).map_or(OTHER, |l| l.1));
            let b = GanttBar {
                x1: b.x1.max(b.x0 + min_w),
                y1: b.y1.max(b.y0 + min_h),
                ..*b
            };
            let corners = [(b.x0, b.y0), (b.x1, b.y1)];
            chart
                .draw_series(std::iter::once(Rectangle::new(corners, c.filled())))
                .map_err(err)?;
            if b.stopped {
                chart
                    .draw_series([
                        PathElement::new(vec![(b.x0, b.y0), (b.x1, b.y1)], STOPPED.stroke_width(1)),
                        PathElement::new(
                            vec![
                                (b.x0, b.y0),
                                (b.x1, b.y0),
                                (b.x1, b.y1),
                                (b.x0, b.y1),
                                (b.x0, b.y0),
                            ],
                            STOPPED.stroke_width(2),
                        ),
                    ])
                    .map_err(err)?;
            }
        }
        if g.machines.len() > 1 {
            for (y, _) in g.machines.iter().skip(1) {
                chart
                    .draw_series([PathElement::new(vec![(x0, *y), (x1, *y)], BLACK.stroke_width(2))])
                    .map_err(err)?;
            }
        }
        // The legend column.
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        side.draw(&Text::new("colour", (8, 40), font.clone()))
            .map_err(err)?;
        let mut y = 62;
        for (name, c) in g.legend {
            side.draw(&Rectangle::new([(8, y), (24, y + 12)], rgb(*c).filled()))
                .map_err(err)?;
            let mut name = name.clone();
            if name.chars().count() > 24 {
                name = name.chars().take(23).collect::<String>() + "…";
            }
            side.draw(&Text::new(name, (30, y), font.clone())).map_err(err)?;
            y += 19;
        }
        if let Some(label) = g.stopped_label {
            y += 8;
            side.draw(&Rectangle::new([(8, y), (24, y + 12)], rgb(OTHER).filled()))
                .map_err(err)?;
            side.draw(&PathElement::new(
                vec![(8, y + 12), (24, y), (24, y + 12), (8, y + 12), (8, y), (24, y)],
                STOPPED.stroke_width(2),
            ))
            .map_err(err)?;
            for (i, line) in textwrap::wrap(label, 24).iter().enumerate() {
                side.draw(&Text::new(
                    line.to_string(),
                    (30, y + 16 * i as i32),
                    font.clone(),
                ))
                .map_err(err)?;
            }
            y += 16 * textwrap::wrap(label, 24).len() as i32;
        }
        if g.machines.len() > 1 {
            // Machines, bottom to top, as the black lines split the rows.
            y += 14;
            side.draw(&Text::new("machines, from the bottom", (8, y), font.clone()))
                .map_err(err)?;
            y += 20;
            for (i, (first, name)) in g.machines.iter().enumerate() {
                let end = g.machines.get(i + 1).map_or(rows, |m| m.0);
                let mut name = format!("{name}: rows {}–{}", tick(*first), tick(end - 1.0));
                if name.chars().count() > 30 {
                    name = name.chars().take(29).collect::<String>() + "…";
                }
                side.draw(&Text::new(
                    name,
                    (8, y),
                    ("sans-serif", 12).into_font().color(&BLACK),
                ))
                .map_err(err)?;
                y += 17;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// How a line over time is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
    /// Thin and pale, behind the others (a bound, a detail).
    Faint,
}

/// A line over time for [`time_lines`] and [`time_steps`].
#[derive(Clone, Debug)]
pub struct TimeSeries {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Index into [`PALETTE`].
    pub color: usize,
    pub stroke: Stroke,
}

/// Axes of a chart over time.
pub struct TimeChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// The y axis' top (a fraction's 1); `None`: 5 % above the data.
    pub y_top: Option<f64>,
    pub series: &'a [TimeSeries],
}

/// The x and y ranges of `series`: y from min(0, lowest) up.
fn ranges(c: &TimeChart) -> ((f64, f64), (f64, f64)) {
    let all = || {
        c.series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.0.is_finite() && p.1.is_finite())
    };
    let x0 = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x0 = if x0.is_finite() { x0 } else { 0.0 };
    let x1 = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let lo = all().map(|p| p.1).fold(0.0, f64::min);
    let hi = all().map(|p| p.1).fold(0.0, f64::max);
    let top = match c.y_top {
        Some(t) if t > lo => t,
        _ => {
            let span = (hi - lo).max(1e-9);
            hi + 0.05 * span + if hi == 0.0 { 1.0 } else { 0.0 }
        }
    };
    let lo = if lo < 0.0 { lo - 0.05 * (top - lo) } else { 0.0 };
    ((x0, x1), (lo, top))
}

/// Width of a time chart, pixels.
const TIME_W: u32 = 900;

/// The legend under a chart: entries left to right, in rows; its height.
fn legend_rows(series: &[TimeSeries]) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut x = 70;
    for (i, s) in series.iter().enumerate() {
        let w = 34 + 7 * s.name.chars().count() as i32 + 18;
        if x + w > TIME_W as i32 - 10 && !rows[rows.len() - 1].is_empty() {
            rows.push(Vec::new());
            x = 70;
        }
        let last = rows.len() - 1;
        rows[last].push((i, x));
        x += w;
    }
    rows
}

fn line_style(s: &TimeSeries, dense: bool) -> ShapeStyle {
    let color = rgb(PALETTE[s.color % PALETTE.len()]);
    match s.stroke {
        Stroke::Faint => color.mix(0.45).stroke_width(1),
        _ if dense => color.stroke_width(1),
        _ => color.stroke_width(2),
    }
}

fn draw_time_chart(c: &TimeChart, stepped: bool) -> Result<String, String> {
    let mut svg = String::new();
    {
        let rows = if c.series.len() > 1 {
            legend_rows(c.series)
        } else {
            Vec::new()
        };
        let strip = if rows.is_empty() {
            0
        } else {
            8 + 20 * rows.len() as u32
        };
        let root = SVGBackend::with_string(&mut svg, (TIME_W, 420 + strip)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot, below) = root.split_vertically(420);
        let ((x0, x1), (y0, y1)) = ranges(c);
        let mut chart = ChartBuilder::on(&plot)
            .caption(c.title, ("sans-serif", 18))
            .margin(12)
            .margin_right(30)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(c.x_label)
            .y_desc(c.y_label)
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|y| tick(*y))
            .draw()
            .map_err(err)?;
        // Faint lines first, behind the others.
        let order = c
            .series
            .iter()
            .filter(|s| s.stroke == Stroke::Faint)
            .chain(c.series.iter().filter(|s| s.stroke != Stroke::Faint));
        for s in order {
            let dense = s.points.len() > 250;
            let style = line_style(s, dense);
            let mut pts: Vec<(f64, f64)> = Vec::with_capacity(s.points.len() * 2);
            for &(x, y) in s.points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
                if stepped && let Some(&(_, prev)) = pts.last() {
                    pts.push((x, prev));
                }
                pts.push((x, y));
            }
            if s.stroke == Stroke::Dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts, 7, 5, style))
                    .map_err(err)?;
            } else {
                chart.draw_series(LineSeries::new(pts, style)).map_err(err)?;
            }
        }
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        for (r, row) in rows.iter().enumerate() {
            let y = 10 + 20 * r as i32;
            for &(i, x) in row {
                let s = &c.series[i];
                let style = line_style(s, false);
                let sample = if s.stroke == Stroke::Dashed {
                    vec![
                        vec![(x, y + 7), (x + 10, y + 7)],
                        vec![(x + 16, y + 7), (x + 26, y + 7)],
                    ]
                } else {
                    vec![vec![(x, y + 7), (x + 26, y + 7)]]
                };
                for seg in sample {
                    below.draw(&PathElement::new(seg, style)).map_err(err)?;
                }
                below
                    .draw(&Text::new(s.name.clone(), (x + 32, y), font.clone()))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Step functions over time (each value holds until the next point).
pub fn time_steps(c: &TimeChart) -> Result<String, String> {
    draw_time_chart(c, true)
}

/// Lines through points over time, solid or dashed.
pub fn time_lines(c: &TimeChart) -> Result<String, String> {
    draw_time_chart(c, false)
}

/// Bars for [`bars`]: one group per `groups` entry, one bar per series
/// in each (a legend when there are several series).
pub struct Bars<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub groups: &'a [String],
    /// Name and one value per group (not finite: no bar).
    pub series: &'a [(String, Vec<f64>)],
    /// A log y axis (values ≤ 0 have no bar); else linear through 0.
    pub log_y: bool,
}

/// Grouped bars on a linear y axis through 0 (negative values go down),
/// or on a log axis in decades: [`crate::plot::bar_chart`]'s.
pub fn bars(c: &Bars) -> Result<String, String> {
    let series: Vec<crate::plot::Series> = c
        .series
        .iter()
        .map(|(name, values)| crate::plot::Series {
            name: name.clone(),
            values: values.clone(),
        })
        .collect();
    crate::plot::bar_chart(&crate::plot::BarChart {
        title: c.title,
        x_label: c.x_label,
        y_label: c.y_label,
        groups: c.groups,
        series: &series,
        log_y: c.log_y,
        paired: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gantt_chart_has_one_rectangle_per_bar_and_its_legend() {
        let bars: Vec<GanttBar> = (0..7)
            .map(|i| GanttBar {
                x0: i as f64 * 10.0,
                x1: i as f64 * 10.0 + 25.0,
                y0: (i % 4) as f64,
                y1: (i % 4) as f64 + 1.0,
                group: i % 3,
                stopped: i == 6,
            })
            .collect();
        let legend = vec![
            ("user 3".to_string(), PALETTE[0]),
            ("user 7".to_string(), PALETTE[1]),
            ("other".to_string(), OTHER),
        ];
        let svg = gantt(&Gantt {
            title: "Gantt",
            x_label: "time (s)",
            y_label: "processor",
            x_range: (0.0, 100.0),
            rows: 4.0,
            machines: &[],
            legend: &legend,
            stopped_label: Some("killed"),
            bars: &bars,
        })
        .unwrap();
        for label in [
            "Gantt",
            "time (s)",
            "processor",
            "user 3",
            "user 7",
            "other",
            "killed",
        ] {
            assert!(svg.contains(label), "{label}");
        }
        // Each bar's fill: the chart's own rectangles are the background,
        // the plot's frame and the legend's swatches.
        let fills = |c: (u8, u8, u8)| {
            svg.matches(&format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2))
                .count()
        };
        assert_eq!(fills(PALETTE[0]), 3 + 1, "bars 0, 3, 6 and a swatch");
        assert_eq!(fills(PALETTE[1]), 2 + 1);
        assert!(
            svg.contains("stroke=\"#C80000\""),
            "stopped work is outlined in red"
        );
    }

    #[test]
    fn time_charts_have_labels_and_dashes() {
        let s = vec![
            TimeSeries {
                name: "ψ org0".into(),
                points: vec![(0.0, 0.0), (10.0, 5.0), (20.0, 12.0)],
                color: 0,
                stroke: Stroke::Solid,
            },
            TimeSeries {
                name: "φ org0".into(),
                points: vec![(0.0, 0.0), (10.0, 6.0), (20.0, -3.0)],
                color: 0,
                stroke: Stroke::Dashed,
            },
        ];
        let c = TimeChart {
            title: "utility",
            x_label: "time (s)",
            y_label: "ψ (s²)",
            y_top: None,
            series: &s,
        };
        let lines = time_lines(&c).unwrap();
        let steps = time_steps(&c).unwrap();
        for svg in [&lines, &steps] {
            for label in ["utility", "time (s)", "ψ (s²)", "ψ org0", "φ org0"] {
                assert!(svg.contains(label), "{label}");
            }
        }
        let b = bars(&Bars {
            title: "φ − ψ",
            x_label: "organization",
            y_label: "φ − ψ (s²)",
            groups: &["org0".into(), "org1".into()],
            series: &[("φ − ψ".into(), vec![-3.0, 3.0])],
            log_y: false,
        })
        .unwrap();
        for label in ["φ − ψ (s²)", "organization", "org0", "org1"] {
            assert!(b.contains(label), "{label}");
        }
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(28_000_000.0), "28000000");
        assert_eq!(tick(0.12345), "0.1235");
    }
}
