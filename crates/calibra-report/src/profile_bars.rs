//! Normalised four-axis profiles as grouped horizontal bars, one group per encoder.

use crate::svg::Svg;

/// One encoder's normalised axis values in [0, 1] (`None` = unobserved axis, drawn as a hatched gap)
/// and its CRS.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileBar {
    pub encoder: String,
    pub values: Vec<Option<f64>>,
    pub crs: Option<f64>,
}

const COLORS: [&str; 6] = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"];

/// An SVG of grouped bars: for each encoder (in the given order) one bar per axis, labelled with
/// `axis_names`, plus the CRS printed at the end of the group.
pub fn profile_bars(title: &str, axis_names: &[&str], profiles: &[ProfileBar]) -> String {
    let bar_h = 9.0;
    let group_h = bar_h * axis_names.len() as f64 + 12.0;
    let left = 170.0;
    let plot_w = 360.0;
    let top = 60.0;
    let height = top + group_h * profiles.len() as f64 + 40.0;
    let mut s = Svg::new(left + plot_w + 110.0, height);
    s.text((left + plot_w) / 2.0, 22.0, title, 14.0, "middle");
    for (i, name) in axis_names.iter().enumerate() {
        let x = left + (i as f64) * 115.0;
        s.rect(x, 34.0, 10.0, 10.0, COLORS[i % COLORS.len()], None);
        s.text(x + 14.0, 43.0, name, 10.0, "start");
    }
    for t in 0..=4 {
        let v = f64::from(t) / 4.0;
        let x = left + v * plot_w;
        s.line(x, top - 4.0, x, height - 30.0, "#eee", false);
        s.text(x, height - 16.0, &format!("{v:.2}"), 10.0, "middle");
    }
    for (g, p) in profiles.iter().enumerate() {
        let y0 = top + g as f64 * group_h;
        s.text(left - 8.0, y0 + group_h / 2.0, &p.encoder, 11.0, "end");
        for (a, v) in p.values.iter().enumerate() {
            let y = y0 + a as f64 * bar_h;
            match v {
                Some(v) => {
                    s.rect(left, y, v.clamp(0.0, 1.0) * plot_w, bar_h - 1.0, COLORS[a % COLORS.len()], None)
                }
                None => s.text(left + 4.0, y + bar_h - 1.5, "unobserved", 8.0, "start"),
            }
        }
        if let Some(crs) = p.crs {
            s.text(left + plot_w + 8.0, y0 + group_h / 2.0, &format!("CRS {crs:.3}"), 11.0, "start");
        }
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_match_observed_values() {
        let p = vec![
            ProfileBar {
                encoder: "a".into(),
                values: vec![Some(1.0), Some(0.5), None, Some(0.0)],
                crs: Some(0.7),
            },
            ProfileBar { encoder: "b".into(), values: vec![Some(0.2); 4], crs: None },
        ];
        let svg = profile_bars("profiles", &["disc", "cal", "le", "rob"], &p);
        assert_eq!(svg.matches("unobserved").count(), 1);
        assert!(svg.contains("CRS 0.700"));
        // 4 legend swatches + 7 observed bars.
        assert_eq!(svg.matches("<rect").count() - 1, 4 + 7);
    }
}
