//! Coverage and size of prediction sets: marginal coverage (fraction of rows whose set holds the true
//! class, MAPIE `classification_coverage_score`), class-conditional coverage (the same per true class),
//! and mean set size (MAPIE `classification_mean_width_score`); for per-label (multilabel) sets the
//! same over the observed (row, label) cells ([`multilabel_set_coverage`]).

use serde::Serialize;

/// Coverage and size of a collection of prediction sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetCoverage {
    pub n: usize,
    /// Fraction of rows whose set contains the label.
    pub coverage: f64,
    /// Coverage over the rows of each true class; `None` for a class with no row.
    pub class_coverage: Vec<Option<f64>>,
    /// Mean number of classes per set.
    pub mean_set_size: f64,
    /// Fraction of empty sets.
    pub empty_fraction: f64,
}

/// Coverage of `sets` (sorted class indices per row) against `labels` over `k` classes; NaN
/// coverage and size for no rows.
pub fn set_coverage(sets: &[Vec<usize>], labels: &[usize], k: usize) -> SetCoverage {
    let n = sets.len().min(labels.len());
    let (mut hits, mut per_hits, mut per_n) = (0usize, vec![0usize; k], vec![0usize; k]);
    let (mut size, mut empty) = (0usize, 0usize);
    for (set, &y) in sets.iter().zip(labels) {
        let hit = set.binary_search(&y).is_ok();
        hits += usize::from(hit);
        if y < k {
            per_n[y] += 1;
            per_hits[y] += usize::from(hit);
        }
        size += set.len();
        empty += usize::from(set.is_empty());
    }
    let nf = n as f64;
    SetCoverage {
        n,
        coverage: hits as f64 / nf,
        class_coverage: per_hits
            .iter()
            .zip(&per_n)
            .map(|(&h, &m)| (m > 0).then(|| h as f64 / m as f64))
            .collect(),
        mean_set_size: size as f64 / nf,
        empty_fraction: empty as f64 / nf,
    }
}

/// Coverage of per-label sets (`sets[row][label]`, each a subset of {0, 1}) against row-major `n × l`
/// targets (`None` = blank): over the observed (row, label) cells; `class_coverage` per label. NaN
/// coverage and size when no cell is observed.
pub fn multilabel_set_coverage(sets: &[Vec<Vec<usize>>], targets: &[Option<bool>], l: usize) -> SetCoverage {
    let (mut hits, mut cells, mut size, mut empty) = (0usize, 0usize, 0usize, 0usize);
    let (mut per_hits, mut per_n) = (vec![0usize; l], vec![0usize; l]);
    for (i, row) in sets.iter().enumerate() {
        for (j, set) in row.iter().enumerate() {
            if let Some(t) = targets[i * l + j] {
                let hit = set.contains(&usize::from(t));
                hits += usize::from(hit);
                cells += 1;
                per_hits[j] += usize::from(hit);
                per_n[j] += 1;
                size += set.len();
                empty += usize::from(set.is_empty());
            }
        }
    }
    let c = cells as f64;
    SetCoverage {
        n: cells,
        coverage: hits as f64 / c,
        class_coverage: per_hits
            .iter()
            .zip(&per_n)
            .map(|(&h, &m)| (m > 0).then(|| h as f64 / m as f64))
            .collect(),
        mean_set_size: size as f64 / c,
        empty_fraction: empty as f64 / c,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn coverage_counts_hits_per_class() {
        let sets = vec![vec![0, 1], vec![1], vec![], vec![2]];
        let c = super::set_coverage(&sets, &[1, 0, 2, 2], 3);
        assert_eq!(c.coverage, 0.5);
        assert_eq!(c.class_coverage, vec![Some(0.0), Some(1.0), Some(0.5)]);
        assert_eq!(c.mean_set_size, 1.0);
        assert_eq!(c.empty_fraction, 0.25);
    }

    #[test]
    fn multilabel_coverage_counts_observed_cells_only() {
        // Two rows × two labels; the blank cell (row 1, label 0) is not counted.
        let sets = vec![vec![vec![1], vec![0, 1]], vec![vec![], vec![0]]];
        let c = super::multilabel_set_coverage(&sets, &[Some(true), Some(false), None, Some(true)], 2);
        assert_eq!(c.n, 3);
        assert_eq!(c.coverage, 2.0 / 3.0);
        assert_eq!(c.class_coverage, vec![Some(1.0), Some(0.5)]);
        assert_eq!(c.mean_set_size, 4.0 / 3.0);
        assert_eq!(c.empty_fraction, 0.0);
    }
}
