//! Reliability diagram: per-bin accuracy against confidence, with the identity line, the gap to it,
//! and a histogram of bin counts underneath — drawn from the same bins the ECE is computed from.

use crate::svg::Svg;
use calibra_metrics::ReliabilityBin;

const W: f64 = 420.0;
const H: f64 = 470.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const PLOT: f64 = 320.0;
const HIST: f64 = 60.0;

/// An SVG reliability diagram of `bins` (as returned by `calibra_metrics::reliability_bins`), titled
/// `title`. Empty bins are drawn as gaps. Bins with `lower == upper` (torchmetrics' extra bin for
/// confidences of exactly 1.0) are drawn as a thin bar at 1.0.
pub fn reliability_diagram(title: &str, bins: &[ReliabilityBin], ece: Option<f64>) -> String {
    let mut s = Svg::new(W, H);
    let x_of = |c: f64| LEFT + c.clamp(0.0, 1.0) * PLOT;
    let y_of = |a: f64| TOP + (1.0 - a.clamp(0.0, 1.0)) * PLOT;
    s.text(W / 2.0, 22.0, title, 14.0, "middle");
    s.rect(LEFT, TOP, PLOT, PLOT, "none", Some("#444"));
    for t in 0..=5 {
        let v = f64::from(t) / 5.0;
        s.text(x_of(v), TOP + PLOT + HIST + 28.0, &format!("{v:.1}"), 10.0, "middle");
        s.text(LEFT - 6.0, y_of(v) + 3.0, &format!("{v:.1}"), 10.0, "end");
        s.line(LEFT, y_of(v), LEFT + PLOT, y_of(v), "#eee", false);
    }
    let max_count = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    for b in bins.iter().filter(|b| b.count > 0) {
        let (x0, x1) =
            if b.upper > b.lower { (x_of(b.lower), x_of(b.upper)) } else { (x_of(1.0) - 2.0, x_of(1.0)) };
        let w = (x1 - x0 - 1.0).max(1.0);
        // Accuracy bar, then the gap between accuracy and mean confidence.
        s.rect(x0 + 0.5, y_of(b.accuracy), w, y_of(0.0) - y_of(b.accuracy), "#4e79a7", None);
        let (top, bottom) = if b.confidence > b.accuracy {
            (y_of(b.confidence), y_of(b.accuracy))
        } else {
            (y_of(b.accuracy), y_of(b.confidence))
        };
        s.rect(x0 + 0.5, top, w, bottom - top, "#e15759", None);
        let h = HIST * b.count as f64 / max_count;
        s.rect(x0 + 0.5, TOP + PLOT + 8.0 + HIST - h, w, h, "#9c9c9c", None);
    }
    s.line(x_of(0.0), y_of(0.0), x_of(1.0), y_of(1.0), "#222", true);
    s.text(LEFT + PLOT / 2.0, H - 8.0, "confidence", 12.0, "middle");
    s.vertical_text(16.0, TOP + PLOT / 2.0, "accuracy", 12.0);
    let label = match ece {
        Some(e) => format!("ECE = {e:.4}"),
        None => "ECE undefined".to_string(),
    };
    s.text(LEFT + 8.0, TOP + 16.0, &label, 12.0, "start");
    s.text(LEFT + 8.0, TOP + 32.0, "blue: accuracy, red: gap to confidence", 10.0, "start");
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_metrics::{Binning, reliability_bins};

    #[test]
    fn one_accuracy_bar_per_non_empty_bin() {
        let conf = [0.05, 0.55, 0.56, 0.95];
        let outcome = [0.0, 1.0, 0.0, 1.0];
        let bins = reliability_bins(&conf, &outcome, 10, Binning::RightClosed);
        let svg = reliability_diagram("test <model>", &bins, Some(0.1));
        assert_eq!(svg.matches("fill=\"#4e79a7\"").count(), 3);
        assert_eq!(svg.matches("fill=\"#9c9c9c\"").count(), 3);
        assert!(svg.contains("test &lt;model&gt;"));
    }
}
