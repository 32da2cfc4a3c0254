//! `calibra transfer score`: the terminal table of one feature matrix's transferability scores.

use calibra_transfer::{Estimator, ScoreReport};
use std::fmt::Write;

use crate::text_cell::cell;

/// The scores of `report`, one row per estimator in `order` (`n/a` where undefined).
pub fn transfer_score_table(report: &ScoreReport, order: &[Estimator]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "n = {}, d = {}, classes = {}", report.n, report.d, report.num_classes);
    let _ = writeln!(s, "{:<26} {:>14}", "estimator", "score");
    for e in order {
        let v = report.scores.get(e.name()).copied().flatten();
        let _ = writeln!(s, "{:<26} {:>14}", e.name(), cell(v));
    }
    s
}
