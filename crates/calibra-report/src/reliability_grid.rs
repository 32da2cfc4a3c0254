//! A grid of small reliability diagrams in one SVG: rows (e.g. encoder · regime · method) by columns
//! (e.g. calibrator), each panel the per-bin accuracy against confidence with the identity line and its
//! ECE, drawn from the same bins as [`crate::reliability_diagram`].

use crate::svg::Svg;
use calibra_metrics::ReliabilityBin;

const PANEL: f64 = 110.0;
const GAP: f64 = 26.0;
const LABEL: f64 = 210.0;
const HEAD: f64 = 64.0;

/// One panel of the grid.
#[derive(Debug, Clone)]
pub struct GridPanel<'a> {
    pub row: usize,
    pub column: usize,
    pub bins: &'a [ReliabilityBin],
    pub ece: f64,
}

/// An SVG grid of reliability panels: `rows` labels down the left, `columns` labels across the top.
pub fn reliability_grid(
    title: &str,
    rows: &[String],
    columns: &[String],
    panels: &[GridPanel<'_>],
) -> String {
    let w = LABEL + columns.len() as f64 * (PANEL + GAP) + 10.0;
    let h = HEAD + rows.len() as f64 * (PANEL + GAP) + 10.0;
    let mut s = Svg::new(w, h);
    s.text(10.0, 20.0, title, 14.0, "start");
    s.text(
        10.0,
        38.0,
        "blue: accuracy per confidence bin; dashed: perfect calibration; grey: empty",
        10.0,
        "start",
    );
    let x0 = |c: usize| LABEL + c as f64 * (PANEL + GAP);
    let y0 = |r: usize| HEAD + r as f64 * (PANEL + GAP);
    for (c, name) in columns.iter().enumerate() {
        s.text(x0(c) + PANEL / 2.0, HEAD - 8.0, name, 11.0, "middle");
    }
    for (r, name) in rows.iter().enumerate() {
        s.text(LABEL - 10.0, y0(r) + PANEL / 2.0 + 4.0, name, 11.0, "end");
    }
    for p in panels {
        let (px, py) = (x0(p.column), y0(p.row));
        s.rect(px, py, PANEL, PANEL, "#fafafa", Some("#888"));
        let x_of = |v: f64| px + v.clamp(0.0, 1.0) * PANEL;
        let y_of = |v: f64| py + (1.0 - v.clamp(0.0, 1.0)) * PANEL;
        for b in p.bins.iter().filter(|b| b.count > 0) {
            let (a, z) =
                if b.upper > b.lower { (x_of(b.lower), x_of(b.upper)) } else { (x_of(1.0) - 1.5, x_of(1.0)) };
            s.rect(
                a + 0.3,
                y_of(b.accuracy),
                (z - a - 0.6).max(0.8),
                y_of(0.0) - y_of(b.accuracy),
                "#4e79a7",
                None,
            );
        }
        s.line(x_of(0.0), y_of(0.0), x_of(1.0), y_of(1.0), "#222", true);
        s.text(px + 4.0, py + 12.0, &format!("ECE {:.4}", p.ece), 9.0, "start");
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_metrics::{Binning, reliability_bins};

    #[test]
    fn one_frame_per_panel_and_every_label() {
        let bins = reliability_bins(&[0.2, 0.8, 0.9], &[0.0, 1.0, 1.0], 10, Binning::RightClosed);
        let panels = [
            GridPanel { row: 0, column: 0, bins: &bins, ece: 0.1 },
            GridPanel { row: 1, column: 1, bins: &bins, ece: 0.2 },
        ];
        let svg =
            reliability_grid("g", &["a · frozen".into(), "b".into()], &["none".into(), "t".into()], &panels);
        assert_eq!(svg.matches("stroke=\"#888\"").count(), 2);
        assert_eq!(svg.matches("fill=\"#4e79a7\"").count(), 2 * 3);
        assert!(svg.contains("a · frozen") && svg.contains("ECE 0.2000"));
    }
}
