//! Training targets of a probe and their validation.

use crate::error::ProbeError;

/// What a probe is trained to predict.
#[derive(Debug, Clone, Copy)]
pub enum Targets<'a> {
    /// One class index in `0..n_classes` per row (binary when `n_classes == 2`).
    Classes { labels: &'a [usize], n_classes: usize },
    /// Row-major `rows × n_labels` independent binary labels; `None` = blank (masked: the row does
    /// not take part in that label's fit).
    Labels { labels: &'a [Option<bool>], n_labels: usize },
}

impl Targets<'_> {
    /// Number of output columns of `predict_proba` (K classes or L labels).
    pub fn n_outputs(&self) -> usize {
        match self {
            Targets::Classes { n_classes, .. } => *n_classes,
            Targets::Labels { n_labels, .. } => *n_labels,
        }
    }

    /// Check the targets against `rows` feature rows.
    ///
    /// Classes: `n_classes ≥ 2`, one label per row, every label `< n_classes`, and every class has at
    /// least one training row. (sklearn infers the classes from `y`, so a class without samples
    /// silently disappears from its `predict_proba` columns, and a single class raises "needs samples
    /// of at least 2 classes"; with a fixed K the unpenalised intercept of an empty class would run
    /// to −∞, so we refuse instead.)
    /// Labels: `n_labels ≥ 1`, `rows × n_labels` entries, and every label has at least one observed
    /// positive and one observed negative (sklearn raises for a one-class binary fit).
    pub fn validate(&self, rows: usize) -> Result<(), ProbeError> {
        match *self {
            Targets::Classes { labels, n_classes } => {
                if n_classes < 2 {
                    return Err(ProbeError::InvalidLabels(format!(
                        "n_classes is {n_classes}, need at least 2"
                    )));
                }
                if labels.len() != rows {
                    return Err(ProbeError::InvalidLabels(format!(
                        "{} labels for {rows} feature rows",
                        labels.len()
                    )));
                }
                let mut counts = vec![0usize; n_classes];
                for (i, &y) in labels.iter().enumerate() {
                    if y >= n_classes {
                        return Err(ProbeError::InvalidLabels(format!(
                            "row {i}: label {y} is out of range 0..{n_classes}"
                        )));
                    }
                    counts[y] += 1;
                }
                if let Some(c) = counts.iter().position(|&c| c == 0) {
                    return Err(ProbeError::InvalidLabels(format!(
                        "class {c} has no training sample (every class in 0..{n_classes} needs one)"
                    )));
                }
                Ok(())
            }
            Targets::Labels { labels, n_labels } => {
                if n_labels == 0 {
                    return Err(ProbeError::InvalidLabels("n_labels is 0".into()));
                }
                if labels.len() != rows * n_labels {
                    return Err(ProbeError::InvalidLabels(format!(
                        "{} label entries for {rows} rows × {n_labels} labels",
                        labels.len()
                    )));
                }
                for l in 0..n_labels {
                    let column = labels.iter().skip(l).step_by(n_labels);
                    let (mut pos, mut neg) = (0usize, 0usize);
                    for v in column.flatten() {
                        if *v { pos += 1 } else { neg += 1 }
                    }
                    if pos == 0 || neg == 0 {
                        return Err(ProbeError::InvalidLabels(format!(
                            "label {l} has {pos} observed positives and {neg} observed negatives \
                             (a binary fit needs both)"
                        )));
                    }
                }
                Ok(())
            }
        }
    }
}

/// Rows observed for label `l`, and their 0/1 targets.
pub(crate) fn observed_rows(labels: &[Option<bool>], n_labels: usize, l: usize) -> (Vec<usize>, Vec<f64>) {
    let mut rows = Vec::new();
    let mut y = Vec::new();
    for (i, v) in labels.iter().skip(l).step_by(n_labels).enumerate() {
        if let Some(b) = v {
            rows.push(i);
            y.push(if *b { 1.0 } else { 0.0 });
        }
    }
    (rows, y)
}

/// The selected rows of a row-major matrix with `cols` columns.
pub(crate) fn select_rows(values: &[f64], cols: usize, rows: &[usize]) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows.len() * cols);
    for &i in rows {
        out.extend_from_slice(&values[i * cols..(i + 1) * cols]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_targets_are_named() {
        let t = Targets::Classes { labels: &[0, 3], n_classes: 3 };
        assert!(t.validate(2).unwrap_err().to_string().contains("row 1: label 3"));
        let t = Targets::Classes { labels: &[0, 0, 2], n_classes: 3 };
        assert!(t.validate(3).unwrap_err().to_string().contains("class 1 has no training sample"));
        let t = Targets::Labels { labels: &[Some(true), None, Some(false), None], n_labels: 2 };
        assert!(t.validate(2).unwrap_err().to_string().contains("label 1 has 0 observed positives"));
        let t = Targets::Classes { labels: &[0, 1], n_classes: 2 };
        assert!(t.validate(3).is_err());
    }
}
