//! Outcome quintiles: how a continuous (regression) target becomes classes for the class-based
//! estimators (seed 001 §4.6: "quintile adaptations for categorical regression estimators").
//!
//! Edges are numpy's `quantile(y, [0.2, 0.4, 0.6, 0.8])` (method "linear"); the class of `y` is
//! `searchsorted(edges, y, side="right")`, i.e. the number of edges `≤ y`, in `0..5`.

/// Number of outcome bins.
pub const QUINTILES: usize = 5;

/// numpy's linear quantile of sorted values at probability `q`.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let t = pos - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    let diff = b - a;
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

/// Quintile class of every value (`y` non-empty and finite).
pub fn quintile_classes(y: &[f64]) -> Vec<usize> {
    let mut sorted = y.to_vec();
    sorted.sort_by(f64::total_cmp);
    let edges: Vec<f64> =
        (1..QUINTILES).map(|k| quantile_sorted(&sorted, k as f64 / QUINTILES as f64)).collect();
    y.iter().map(|v| edges.iter().filter(|e| **e <= *v).count()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_values_split_in_pairs() {
        let y: Vec<f64> = (0..10).map(f64::from).collect();
        // edges 1.8, 3.6, 5.4, 7.2
        assert_eq!(quintile_classes(&y), vec![0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
    }
}
