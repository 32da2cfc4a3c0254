//! One encoder analysis's result: its rows, or why there are none, with the cells it left out.

use serde::Serialize;

/// One analysis: its rows, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis<T> {
    pub rows: Vec<T>,
    /// `None` when rows were computed; otherwise `"not enough records: …"`.
    pub status: Option<String>,
    /// Cells left out and why.
    pub notes: Vec<String>,
}

impl<T> Analysis<T> {
    pub(crate) fn new(rows: Vec<T>, missing: impl FnOnce() -> String, notes: Vec<String>) -> Self {
        let status = rows.is_empty().then(|| format!("not enough records: {}", missing()));
        Analysis { rows, status, notes }
    }
}

/// The mean of `v`; `None` when empty.
pub(crate) fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}
