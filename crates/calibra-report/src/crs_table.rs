//! How `calibra crs` shows a [`ProfileScoring`]: a table by rank (D, S, W, CRS and notes), or JSON
//! rows.

use crate::ProfileScoring;
use serde::Serialize;
use std::fmt::Write;

/// One row of the JSON output.
#[derive(Debug, Serialize)]
pub struct CrsRow<'a> {
    pub encoder: &'a str,
    pub dominance: f64,
    pub ideal: f64,
    pub worst: f64,
    pub crs: f64,
    pub rank: usize,
}

impl ProfileScoring {
    /// The rows by rank.
    pub fn rows(&self) -> Vec<CrsRow<'_>> {
        self.order
            .iter()
            .map(|&i| {
                let c = self.scores[i].components;
                CrsRow {
                    encoder: &self.scores[i].encoder,
                    dominance: c.dominance,
                    ideal: c.ideal,
                    worst: c.worst,
                    crs: c.crs,
                    rank: self.ranks[i],
                }
            })
            .collect()
    }

    /// The table: the reference's origin and weights, then one line per encoder by rank.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let w = self.reference.weights();
        let a = w.axis.as_slice();
        let _ = writeln!(out, "{}", self.origin);
        if let [a0, a1, a2, a3] = a {
            let _ = writeln!(
                out,
                "CRS = {}·D + {}·S + {}·W; axis weights (disc, cal, le, rob) = ({}, {}, {}, {})",
                w.component.dominance, w.component.ideal, w.component.worst, a0, a1, a2, a3
            );
        } else {
            let shown: Vec<String> = a.iter().map(f64::to_string).collect();
            let _ = writeln!(
                out,
                "CRS = {}·D + {}·S + {}·W; axis weights (disc, cal, le, rob, sel) = ({})",
                w.component.dominance,
                w.component.ideal,
                w.component.worst,
                shown.join(", ")
            );
        }
        let _ = writeln!(out);
        let scores = &self.scores;
        let width = scores.iter().map(|s| s.encoder.chars().count()).max().unwrap_or(0).max("encoder".len());
        let _ = writeln!(
            out,
            "{:>4}  {:<width$}  {:>8}  {:>8}  {:>8}  {:>8}  note",
            "rank", "encoder", "D", "S", "W", "CRS"
        );
        for &i in &self.order {
            let s = &scores[i];
            let c = s.components;
            let mut note = Vec::new();
            if !s.in_panel {
                note.push("candidate".to_string());
            }
            if !s.saturated.is_empty() {
                let axes: Vec<&str> = s.saturated.iter().map(|a| a.name()).collect();
                note.push(format!("clipped: {}", axes.join(",")));
            }
            let _ = writeln!(
                out,
                "{:>4}  {:<width$}  {:>8.4}  {:>8.4}  {:>8.4}  {:>8.4}  {}",
                self.ranks[i],
                s.encoder,
                c.dominance,
                c.ideal,
                c.worst,
                c.crs,
                note.join("; ")
            );
        }
        out
    }
}
