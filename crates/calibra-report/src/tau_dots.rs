//! Dot chart of rank agreements: one row per item (e.g. an estimator at a layer), one coloured dot per
//! series (e.g. a prediction target and outcome) at its Kendall τ-b on a [−1, 1] axis, with a solid
//! line at 0 and an optional dashed threshold line.

use crate::svg::Svg;

const COLORS: [&str; 6] = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"];

/// An SVG dot chart. `values[row][series]` is the τ of `rows[row]` for `series[series]` (`None`: not
/// drawn). Values outside [−1, 1] are clamped; `threshold` draws a dashed vertical line.
pub fn tau_dots(
    title: &str,
    rows: &[String],
    series: &[String],
    values: &[Vec<Option<f64>>],
    threshold: Option<f64>,
) -> String {
    let left = 190.0;
    let plot_w = 360.0;
    let legend_h = 16.0 * series.len() as f64;
    let top = 44.0 + legend_h + 10.0;
    let row_h = 8.0 + 5.0 * series.len().max(1) as f64;
    let height = top + row_h * rows.len() as f64 + 40.0;
    let mut s = Svg::new(left + plot_w + 40.0, height);
    s.text((left + plot_w) / 2.0, 22.0, title, 14.0, "middle");
    for (i, name) in series.iter().enumerate() {
        let y = 36.0 + 16.0 * i as f64;
        s.rect(left, y, 10.0, 10.0, COLORS[i % COLORS.len()], None);
        s.text(left + 14.0, y + 9.0, name, 10.0, "start");
    }
    let x_of = |v: f64| left + (v.clamp(-1.0, 1.0) + 1.0) / 2.0 * plot_w;
    let bottom = top + row_h * rows.len() as f64;
    for t in 0..=4 {
        let v = -1.0 + f64::from(t) / 2.0;
        let x = x_of(v);
        s.line(x, top - 4.0, x, bottom, if t == 2 { "#888" } else { "#eee" }, false);
        s.text(x, bottom + 16.0, &format!("{v:.1}"), 10.0, "middle");
    }
    if let Some(th) = threshold {
        s.line(x_of(th), top - 4.0, x_of(th), bottom, "#e15759", true);
    }
    s.text(left + plot_w / 2.0, bottom + 32.0, "Kendall τ-b", 11.0, "middle");
    for (r, name) in rows.iter().enumerate() {
        let y0 = top + r as f64 * row_h;
        s.text(left - 8.0, y0 + row_h / 2.0 + 4.0, name, 11.0, "end");
        for (k, v) in values.get(r).into_iter().flatten().enumerate() {
            if let Some(v) = v {
                let y = y0 + 4.0 + 5.0 * k as f64;
                s.rect(x_of(*v) - 3.0, y - 1.0, 6.0, 4.5, COLORS[k % COLORS.len()], Some("#333"));
            }
        }
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_dot_per_defined_value_and_a_threshold_line() {
        let rows = vec!["logme".to_string(), "gbc@0.5".to_string()];
        let series = vec!["lora ce · discrimination".to_string(), "frozen p · crs".to_string()];
        let values = vec![vec![Some(1.0), None], vec![Some(-0.5), Some(2.0)]];
        let svg = tau_dots("τ-b", &rows, &series, &values, Some(0.5));
        // Background + 2 legend swatches + 3 dots.
        assert_eq!(svg.matches("<rect").count(), 1 + 2 + 3, "{svg}");
        assert_eq!(svg.matches("stroke-dasharray").count(), 1);
        assert!(svg.contains("gbc@0.5") && svg.contains("frozen p · crs"));
        // A value of 2 is clamped onto the axis end (x = left + plot width, minus half a dot).
        assert!(svg.contains("x=\"547.00\""), "{svg}");
    }
}
