//! SVG charts (plotters, SVG backend: no font files needed, text is left
//! to the viewer). Each function returns the SVG document as a string; the
//! caller writes it atomically.

use plotters::prelude::*;

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
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
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
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

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
