//! A multi-series line chart (one polyline and dot per point per series, a legend, an optional dashed
//! reference line): the risk–coverage curves and the coverage-under-shift chart of the selective
//! section.

use crate::svg::Svg;

const W: f64 = 560.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const PLOT_W: f64 = 320.0;
const PLOT_H: f64 = 260.0;
const LEGEND_X: f64 = LEFT + PLOT_W + 16.0;

/// Colour-blind-safe palette (Tableau 10), cycled.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#bab0ac",
];

/// One series: a name and its points `(x, y)`; `None` breaks the line (an undefined value).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, Option<f64>)>,
}

/// The axes of a [`line_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChartAxes {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// `(x, label)` of each tick; the x range is that of the ticks.
    pub x_ticks: Vec<(f64, String)>,
    /// `(min, max)` of the y axis.
    pub y_range: (f64, f64),
    /// A dashed horizontal line at this y, with its label.
    pub reference: Option<(f64, String)>,
}

/// An SVG line chart of `series` on `axes`; non-finite values are not drawn.
pub fn line_chart(axes: &ChartAxes, series: &[Series]) -> String {
    let h = (TOP + PLOT_H + 60.0).max(TOP + 20.0 + 16.0 * series.len() as f64);
    let mut s = Svg::new(W, h);
    let (x0, x1) =
        axes.x_ticks.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, _)| (a.min(*x), b.max(*x)));
    let (x0, x1) = if x0.is_finite() && x1 > x0 { (x0, x1) } else { (0.0, 1.0) };
    let (y0, y1) = if axes.y_range.1 > axes.y_range.0 { axes.y_range } else { (0.0, 1.0) };
    let x_of = |x: f64| LEFT + (x - x0) / (x1 - x0) * PLOT_W;
    let y_of = |y: f64| TOP + (1.0 - (y.clamp(y0, y1) - y0) / (y1 - y0)) * PLOT_H;
    s.text(W / 2.0, 22.0, &axes.title, 14.0, "middle");
    s.rect(LEFT, TOP, PLOT_W, PLOT_H, "none", Some("#444"));
    for t in 0..=4 {
        let v = y0 + (y1 - y0) * f64::from(t) / 4.0;
        s.line(LEFT, y_of(v), LEFT + PLOT_W, y_of(v), "#eee", false);
        s.text(LEFT - 6.0, y_of(v) + 3.0, &format!("{v:.2}"), 10.0, "end");
    }
    for (x, label) in &axes.x_ticks {
        s.line(x_of(*x), TOP + PLOT_H, x_of(*x), TOP + PLOT_H + 4.0, "#444", false);
        s.text(x_of(*x), TOP + PLOT_H + 16.0, label, 10.0, "middle");
    }
    if let Some((y, label)) = &axes.reference {
        s.line(LEFT, y_of(*y), LEFT + PLOT_W, y_of(*y), "#222", true);
        s.text(LEFT + PLOT_W - 4.0, y_of(*y) - 4.0, label, 10.0, "end");
    }
    for (i, series) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let mut run: Vec<(f64, f64)> = Vec::new();
        for &(x, y) in &series.points {
            match y.filter(|v| v.is_finite() && x.is_finite()) {
                Some(v) => {
                    let p = (x_of(x), y_of(v));
                    s.rect(p.0 - 2.0, p.1 - 2.0, 4.0, 4.0, colour, None);
                    run.push(p);
                }
                None => {
                    if run.len() > 1 {
                        s.polyline(&run, colour);
                    }
                    run.clear();
                }
            }
        }
        if run.len() > 1 {
            s.polyline(&run, colour);
        }
        let ly = TOP + 10.0 + 16.0 * i as f64;
        s.rect(LEGEND_X, ly - 8.0, 10.0, 10.0, colour, None);
        s.text(LEGEND_X + 14.0, ly, &series.name, 10.0, "start");
    }
    s.text(LEFT + PLOT_W / 2.0, TOP + PLOT_H + 40.0, &axes.x_label, 12.0, "middle");
    s.vertical_text(16.0, TOP + PLOT_H / 2.0, &axes.y_label, 12.0);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_polyline_per_unbroken_run_and_one_legend_entry_per_series() {
        let axes = ChartAxes {
            title: "t <x>".into(),
            x_label: "coverage".into(),
            y_label: "risk".into(),
            x_ticks: vec![(0.0, "0".into()), (1.0, "1".into())],
            y_range: (0.0, 0.5),
            reference: Some((0.25, "ref".into())),
        };
        let series = vec![
            Series { name: "a".into(), points: vec![(0.0, Some(0.1)), (0.5, Some(0.2)), (1.0, Some(0.3))] },
            Series {
                name: "b".into(),
                points: vec![(0.0, Some(0.1)), (0.5, None), (0.8, Some(0.2)), (1.0, Some(f64::NAN))],
            },
        ];
        let svg = line_chart(&axes, &series);
        assert_eq!(svg.matches("<polyline").count(), 1, "{svg}");
        assert!(svg.contains("t &lt;x&gt;") && svg.contains(">ref<") && svg.contains("stroke-dasharray"));
        // 3 + 2 dots and 2 legend swatches in the series colours.
        assert_eq!(svg.matches("fill=\"#4e79a7\"").count(), 4);
        assert_eq!(svg.matches("fill=\"#f28e2b\"").count(), 3);
    }
}
