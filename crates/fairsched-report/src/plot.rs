//! SVG charts (plotters, SVG backend: no font files needed, text is left
//! to the viewer). Each function returns the SVG document as a string; the
//! caller writes it atomically.

use plotters::prelude::*;
use plotters::style::text_anchor;

/// A named series of values, one per x position.
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// A tick label: whole numbers without decimals.
fn number(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 * x.abs().max(1.0) && x.abs() < 1e15 {
        format!("{:.0}", x.round())
    } else {
        format!("{x}")
    }
}

/// The series legend, on a white box with a border, at `pos`.
fn legend<'a, DB, CT>(chart: &mut ChartContext<'a, DB, CT>, pos: SeriesLabelPosition) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(pos)
        .draw()
        .map_err(err)
}

fn err(e: impl std::fmt::Display) -> String {
    format!("chart: {e}")
}

/// The y range covering every finite positive value, on a log scale
/// (values ≤ 0 have no bar or point: the caller's table shows them).
fn log_range(series: &[Series]) -> (f64, f64) {
    let pos = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = pos.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    // Headroom above the data for the legend.
    if hi <= 0.0 {
        (0.01, 100.0)
    } else {
        (lo / 2.0, hi * 50.0)
    }
}

/// Grouped bars: one group per `groups` entry, one bar per series in each,
/// on a log y axis.
pub fn grouped_bars(
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[Series],
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let width = (160 + 90 * groups.len().max(1)) as u32;
        let root = SVGBackend::with_string(&mut svg, (width.max(640), 420)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (lo, hi) = log_range(series);
        let n = groups.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n, (lo..hi).log_scale())
            .map_err(err)?;
        let names = groups.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 1e-9 {
                    names.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_label)
            .y_label_formatter(&|y| number(*y))
            .draw()
            .map_err(err)?;
        let k = series.len().max(1) as f64;
        let w = 0.8 / k;
        for (si, s) in series.iter().enumerate() {
            let color = COLORS[si % COLORS.len()];
            let bars = s
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(g, &v)| {
                    let x0 = g as f64 + 0.1 + si as f64 * w;
                    Rectangle::new([(x0, lo), (x0 + w * 0.9, v.max(lo))], color.filled())
                });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Lines over numeric x positions, on a log y axis.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    xs: &[f64],
    series: &[Series],
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (lo, hi) = log_range(series);
        let x0 = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let x1 = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (x0, x1) = if x0.is_finite() && x1 > x0 {
            (x0, x1)
        } else {
            (0.0, 1.0)
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, (lo..hi).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_label_formatter(&|x| number(*x))
            .y_label_formatter(&|y| number(*y))
            .draw()
            .map_err(err)?;
        for (si, s) in series.iter().enumerate() {
            let color = COLORS[si % COLORS.len()];
            let pts: Vec<(f64, f64)> = xs
                .iter()
                .zip(&s.values)
                .filter(|(_, v)| v.is_finite() && **v > 0.0)
                .map(|(&x, &v)| (x, v))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Performance profiles: for each series the step function p(τ) over
/// `taus` (linear axes, y from 0 to 1).
pub fn profiles(title: &str, x_label: &str, taus: &[f64], series: &[Series]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let x0 = taus.first().copied().unwrap_or(1.0);
        let x1 = taus.last().copied().filter(|&x| x > x0).unwrap_or(x0 + 1.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1, 0.0..1.05)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc("p(τ): fraction of instances")
            .draw()
            .map_err(err)?;
        for (si, s) in series.iter().enumerate() {
            let color = COLORS[si % COLORS.len()];
            // A step function: hold each value until the next τ.
            let mut pts: Vec<(f64, f64)> = Vec::new();
            for (i, (&t, &v)) in taus.iter().zip(&s.values).enumerate() {
                if i > 0 {
                    pts.push((t, pts.last().map_or(v, |p| p.1)));
                }
                pts.push((t, v));
            }
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Step functions over time, each series its own (x, y) points (linear
/// axes, y from 0): the value holds until the next point.
pub fn steps(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let all = || series.iter().flat_map(|s| s.1.iter());
        let x0 = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let x0 = if x0.is_finite() { x0 } else { 0.0 };
        let x1 = all().map(|p| p.0).fold(x0, f64::max).max(x0 + 1.0);
        let y1 = all()
            .map(|p| p.1)
            .filter(|y| y.is_finite())
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.05;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1, 0.0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(err)?;
        for (si, (name, points)) in series.iter().enumerate() {
            let color = COLORS[si % COLORS.len()];
            let mut pts: Vec<(f64, f64)> = Vec::with_capacity(points.len() * 2);
            for &(x, y) in points {
                if let Some(&(_, prev)) = pts.last() {
                    pts.push((x, prev));
                }
                pts.push((x, y));
            }
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A heat map of `values[row][col]` (rows top to bottom), green for the
/// lowest value to red for the highest, each cell labelled with its value.
pub fn heatmap(
    title: &str,
    row_label: &str,
    col_label: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<f64>],
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (860, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let finite = values.iter().flatten().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        let (nr, nc) = (rows.len().max(1), cols.len().max(1));
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..nc as f64, 0.0..nr as f64)
            .map_err(err)?;
        let col_at = |x: f64| cols.get(x.floor() as usize).cloned().unwrap_or_default();
        let row_at = |y: f64| {
            let i = nr as isize - 1 - y.floor() as isize;
            usize::try_from(i)
                .ok()
                .and_then(|i| rows.get(i))
                .cloned()
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(col_label)
            .y_desc(row_label)
            .x_labels(nc * 2 + 1)
            .y_labels(nr * 2 + 1)
            .x_label_formatter(&|x| {
                if (x.fract() - 0.5).abs() < 1e-9 {
                    col_at(*x)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| {
                if (y.fract() - 0.5).abs() < 1e-9 {
                    row_at(*y)
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(err)?;
        let color = |v: f64| {
            if !v.is_finite() || hi <= lo {
                return RGBColor(200, 200, 200);
            }
            let t = (v - lo) / (hi - lo);
            let (r, g) = if t < 0.5 {
                (510.0 * t, 200.0)
            } else {
                (255.0, 200.0 * (2.0 - 2.0 * t))
            };
            RGBColor(r.round() as u8, g.round() as u8, 80)
        };
        for (i, row) in values.iter().enumerate() {
            let y = (nr - 1 - i) as f64;
            for (j, &v) in row.iter().enumerate() {
                let x = j as f64;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, y), (x + 1.0, y + 1.0)],
                        color(v).filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("{v:.3}"),
                        (x + 0.12, y + 0.62),
                        ("sans-serif", 11),
                    )))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One panel of [`panels`]: its y label and its series over the shared xs.
pub struct Panel {
    pub y_label: String,
    pub series: Vec<Series>,
}

/// Panels side by side sharing a log-scaled x axis, each with a linear y
/// axis from 0 (a legend in the first).
pub fn panels(title: &str, x_label: &str, xs: &[f64], panels: &[Panel]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let w = 380 * panels.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut svg, (w, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(err)?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        let x0 = xs
            .iter()
            .copied()
            .filter(|x| *x > 0.0)
            .fold(f64::INFINITY, f64::min);
        let x1 = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (x0, x1) = if x0.is_finite() && x1 > x0 {
            (x0, x1)
        } else if x0.is_finite() {
            // One x value: a decade around it.
            (x0 / 3.0, x0 * 3.0)
        } else {
            (1.0, 10.0)
        };
        for (k, (p, area)) in panels.iter().zip(areas.iter()).enumerate() {
            let hi = p
                .series
                .iter()
                .flat_map(|s| s.values.iter().copied())
                .filter(|v| v.is_finite())
                .fold(0.0f64, f64::max);
            let hi = if hi > 0.0 { hi * 1.15 } else { 1.0 };
            let mut chart = ChartBuilder::on(area)
                .margin(10)
                .x_label_area_size(40)
                .y_label_area_size(55)
                .build_cartesian_2d((x0..x1).log_scale(), 0.0..hi)
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(p.y_label.as_str())
                .x_label_formatter(&|x| number(*x))
                .draw()
                .map_err(err)?;
            for (si, s) in p.series.iter().enumerate() {
                let color = COLORS[si % COLORS.len()];
                let pts: Vec<(f64, f64)> = xs
                    .iter()
                    .zip(&s.values)
                    .filter(|(x, v)| **x > 0.0 && v.is_finite())
                    .map(|(&x, &v)| (x, v))
                    .collect();
                let drawn = chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(err)?;
                if k == 0 {
                    drawn.label(s.name.clone()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                }
                chart
                    .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                    .map_err(err)?;
            }
            if k == 0 {
                legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_are_one_svg_with_every_label() {
        let s = |n: &str, v: Vec<f64>| Series {
            name: n.into(),
            values: v,
        };
        let svg = panels(
            "night",
            "n_submit",
            &[3.0, 100.0, 1000.0],
            &[
                Panel {
                    y_label: "unhappy users".into(),
                    series: vec![
                        s("legacy", vec![0.0, 2.0, 9.0]),
                        s("diet-ethic", vec![0.0, 0.0, 0.0]),
                    ],
                },
                Panel {
                    y_label: "unfairness".into(),
                    series: vec![s("legacy", vec![1.0, 0.5, 0.2])],
                },
            ],
        )
        .unwrap();
        for label in [
            "night",
            "n_submit",
            "unhappy users",
            "unfairness",
            "legacy",
            "diet-ethic",
        ] {
            assert!(svg.contains(label), "{label}");
        }
    }

    #[test]
    fn profiles_and_heat_maps_are_svg_documents_with_every_label() {
        let s = vec![Series {
            name: "PFFP".into(),
            values: vec![0.25, 0.5, 1.0],
        }];
        let svg = profiles("Test 2: ρ", "τ", &[1.0, 1.5, 2.0], &s).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("PFFP") && svg.contains("Test 2"));
        let svg = heatmap(
            "grid",
            "φ",
            "ψ",
            &["0.001".into(), "0.01".into()],
            &["0.002".into(), "0.02".into()],
            &[vec![1.0, 2.0], vec![1.5, f64::NAN]],
        )
        .unwrap();
        for label in ["0.001", "0.02", "1.500", "grid"] {
            assert!(svg.contains(label), "{label}");
        }
    }

    #[test]
    fn charts_are_svg_documents_with_every_label() {
        let s = vec![
            Series {
                name: "alpha".into(),
                values: vec![1.0, 10.0],
            },
            Series {
                name: "beta".into(),
                values: vec![0.0, f64::NAN],
            },
        ];
        let bars = grouped_bars("T", "y", &["g1".into(), "g2".into()], &s).unwrap();
        assert!(bars.starts_with("<svg") && bars.contains("alpha") && bars.contains("g2"));
        let l = lines("T", "x", "y", &[2.0, 3.0], &s).unwrap();
        assert!(l.starts_with("<svg") && l.contains("beta"));
        assert!(!l.contains(">\n2.0\n<"), "whole-number ticks: {l}");
    }
}

/// A bar chart for [`bar_chart`]: one group of bars per `groups` entry,
/// one bar per series in each group.
pub struct BarChart<'a> {
    pub title: &'a str,
    /// What the groups are (the x axis' label).
    pub x_label: &'a str,
    /// What the bars measure, with its unit.
    pub y_label: &'a str,
    pub groups: &'a [String],
    pub series: &'a [Series],
    /// A log y axis (values ≤ 0 then have no bar); else linear from 0.
    pub log_y: bool,
    /// Series come in pairs (ours, the paper's): both of a pair share a
    /// colour, the second pale with an outline.
    pub paired: bool,
}

/// Grouped bars with both axes labelled and a legend. On a log axis the
/// bars stand on the lowest tick; a value that is not finite (or ≤ 0 on
/// a log axis) has no bar.
pub fn bar_chart(c: &BarChart) -> Result<String, String> {
    let mut svg = String::new();
    {
        let width = (200 + 30 * c.series.len().max(1) * c.groups.len().max(1)) as u32;
        let root = SVGBackend::with_string(&mut svg, (width.clamp(640, 1100), 440)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let finite = || {
            c.series
                .iter()
                .flat_map(|s| s.values.iter().copied())
                .filter(|v| v.is_finite() && (!c.log_y || *v > 0.0))
        };
        // Log axes are drawn in decades (log10 of the value), labelled
        // with the values; room above the data for the legend.
        let (lo, hi) = if c.log_y {
            let (a, b) = finite().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(libm::log10(v)), b.max(libm::log10(v)))
            });
            if a.is_finite() {
                // At least half a decade under the smallest bar's top.
                let lo = (a - 0.5).floor().min(b.ceil() - 1.0);
                (lo, b + (b - lo).max(1.0) * (0.15 + 0.07 * c.series.len() as f64))
            } else {
                (0.0, 2.0)
            }
        } else {
            let top = finite().fold(0.0f64, f64::max);
            let bottom = finite().fold(0.0f64, f64::min);
            let span = (top - bottom).max(1e-9);
            (bottom, top + span * (0.15 + 0.08 * c.series.len() as f64))
        };
        let n = c.groups.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(c.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n, lo..hi)
            .map_err(err)?;
        let names = c.groups.to_vec();
        let log_y = c.log_y;
        let decades = (hi - lo).round().max(1.0) as usize;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(c.groups.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 1e-9 {
                    names.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_labels(if log_y { decades + 1 } else { 10 })
            .x_desc(c.x_label)
            .y_desc(c.y_label)
            .y_label_formatter(&|y| {
                if !log_y {
                    number(*y)
                } else if (y - y.round()).abs() < 1e-9 {
                    number(10f64.powi(y.round() as i32))
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(err)?;
        let k = c.series.len().max(1) as f64;
        let w = 0.8 / k;
        for (si, s) in c.series.iter().enumerate() {
            let (base, pale) = if c.paired {
                (COLORS[(si / 2) % COLORS.len()], si % 2 == 1)
            } else {
                (COLORS[si % COLORS.len()], false)
            };
            let fill = if pale {
                base.mix(0.35).filled()
            } else {
                base.filled()
            };
            let y = |v: f64| if log_y { libm::log10(v) } else { v };
            let bars: Vec<_> = s
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite() && (!log_y || **v > 0.0))
                .flat_map(|(g, &v)| {
                    let x0 = g as f64 + 0.1 + si as f64 * w;
                    let (y0, y1) = if log_y { (lo, y(v)) } else { (0.0, v) };
                    let corners = [(x0, y0), (x0 + w * 0.9, y1)];
                    let mut r = vec![Rectangle::new(corners, fill)];
                    if pale {
                        r.push(Rectangle::new(corners, base.stroke_width(1)));
                    }
                    r
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + Rectangle::new([(0, -5), (12, 5)], fill)
                        + Rectangle::new([(0, -5), (12, 5)], base.stroke_width(1))
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod bar_chart_tests {
    use super::*;

    fn chart(log_y: bool, values: [Vec<f64>; 2]) -> String {
        let [a, b] = values;
        let series = [
            Series {
                name: "ρ ours".into(),
                values: a,
            },
            Series {
                name: "ρ paper".into(),
                values: b,
            },
        ];
        bar_chart(&BarChart {
            title: "Test 2: degradation",
            x_label: "strategy",
            y_label: "degradation (%)",
            groups: &["MST".into(), "PFFP1".into(), "Rand".into()],
            series: &series,
            log_y,
            paired: true,
        })
        .unwrap()
    }

    #[test]
    fn bars_have_both_axis_labels_the_groups_and_a_legend() {
        for log_y in [false, true] {
            let svg = chart(log_y, [vec![0.0, 12.5, 3.0], vec![0.0, 1.52, f64::NAN]]);
            for label in [
                "Test 2: degradation",
                "strategy",
                "degradation (%)",
                "MST",
                "PFFP1",
                "Rand",
                "ρ ours",
                "ρ paper",
            ] {
                assert!(svg.contains(label), "{label} (log {log_y})");
            }
        }
    }

    #[test]
    fn a_log_axis_is_labelled_in_decades_and_leaves_out_zeros() {
        let svg = chart(true, [vec![0.0, 100.0, 0.5], vec![0.0, 2.0, 0.0]]);
        for tick in [">\n0.1\n<", ">\n1\n<", ">\n10\n<", ">\n100\n<"] {
            assert!(svg.contains(tick), "{tick}");
        }
        // 3 positive values: 3 bars, each pale one (the paper's) outlined
        // too; plus the legend's 2 swatches of 2 rectangles and the
        // background.
        let rects = svg.matches("<rect").count();
        let zero = chart(true, [vec![0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0]]);
        let none = zero.matches("<rect").count();
        assert_eq!(rects - none, 4, "{svg}");
    }
}

/// One panel of [`reading_panels`]: a value per row (NaN: no bar) and
/// the paper's value, drawn as a dashed line.
pub struct ReadingPanel {
    pub name: String,
    pub values: Vec<f64>,
    pub paper: Option<f64>,
}

/// Panels side by side sharing one row axis: a horizontal bar per row
/// (the first row on top) from 0 to its value, and the paper's value as a
/// dashed vertical line; row names on the left of the first panel. A
/// study draws one per case: a row per reading, a panel per figure.
pub fn reading_panels(title: &str, rows: &[String], panels: &[ReadingPanel]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let n = rows.len().max(1);
        let k = panels.len().max(1);
        let longest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(4);
        let label_w = (longest as u32 * 7 + 16).clamp(60, 240);
        let panel_w = 230u32;
        let width = label_w + panel_w * k as u32 + 24;
        let height = 110 + 22 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(err)?;
        let (labels, plots) = root.split_horizontally(label_w);
        let areas = plots.split_evenly((1, k));
        let names = rows.to_vec();
        for (pi, (area, p)) in areas.iter().zip(panels).enumerate() {
            let top = p
                .values
                .iter()
                .copied()
                .chain(p.paper)
                .filter(|v| v.is_finite())
                .fold(0.0f64, f64::max);
            let bottom = p
                .values
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold(0.0f64, f64::min);
            let hi = if top > 0.0 { top * 1.12 } else { 1.0 };
            let mut chart = ChartBuilder::on(area)
                .caption(&p.name, ("sans-serif", 13))
                .margin(6)
                .x_label_area_size(28)
                .y_label_area_size(0)
                .build_cartesian_2d(bottom..hi, 0f64..n as f64)
                .map_err(err)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_labels(5)
                .x_label_formatter(&|x| {
                    let r = (x * 100.0).round() / 100.0;
                    number(r)
                })
                .draw()
                .map_err(err)?;
            let color = COLORS[pi % COLORS.len()];
            chart
                .draw_series(
                    p.values
                        .iter()
                        .enumerate()
                        .filter(|(_, v)| v.is_finite())
                        .map(|(i, &v)| {
                            let y = (n - 1 - i) as f64;
                            Rectangle::new([(0.0, y + 0.18), (v, y + 0.82)], color.filled())
                        }),
                )
                .map_err(err)?;
            if let Some(x) = p.paper.filter(|x| x.is_finite()) {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(x, 0.0), (x, n as f64)],
                        6,
                        4,
                        BLACK.stroke_width(2),
                    ))
                    .map_err(err)?;
            }
            // The row names, beside the first panel's rows.
            if pi == 0 {
                let (_, y0) = chart.backend_coord(&(bottom, n as f64));
                let (_, y1) = chart.backend_coord(&(bottom, 0.0));
                let step = (y1 - y0) as f64 / n as f64;
                // Text is placed in the label area's own pixels.
                let base = labels.get_base_pixel().1 as f64;
                let style = TextStyle::from(("sans-serif", 12).into_font()).pos(text_anchor::Pos::new(
                    text_anchor::HPos::Right,
                    text_anchor::VPos::Center,
                ));
                for (i, name) in names.iter().enumerate() {
                    let y = y0 as f64 - base + step * (i as f64 + 0.5);
                    labels
                        .draw(&Text::new(
                            name.clone(),
                            (label_w as i32 - 8, y as i32),
                            style.clone(),
                        ))
                        .map_err(err)?;
                }
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod reading_panel_tests {
    use super::*;

    #[test]
    fn reading_panels_name_every_row_and_panel() {
        let rows = vec!["default".to_string(), "calibrated-36min".to_string()];
        let svg = reading_panels(
            "exp1",
            &rows,
            &[
                ReadingPanel {
                    name: "σ_s factor, max".into(),
                    values: vec![3.97, 4.91],
                    paper: Some(7.0),
                },
                ReadingPanel {
                    name: "μ factor".into(),
                    values: vec![0.98, f64::NAN],
                    paper: None,
                },
            ],
        )
        .unwrap();
        for s in [
            "<svg",
            "default",
            "calibrated-36min",
            "σ_s factor, max",
            "μ factor",
            "exp1",
        ] {
            assert!(svg.contains(s), "{s} missing");
        }
        // The paper's line: a dashed series is drawn as path segments.
        assert!(svg.matches("<polyline").count() + svg.matches("<path").count() > 0);
    }
}
