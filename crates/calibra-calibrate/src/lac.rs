//! LAC / THR conformity scores and sets (MAPIE 1.6 `LACConformityScore`): score `1 − p̂_y`, set
//! `{k : (1 − p̂_k) − q̂ ≤ 1e-8}`. See [`crate::conformal`].

use crate::conformal::EPSILON;

/// `1 − p̂_{i, y_i}` of every calibration row (inputs validated by the caller).
pub fn scores(probs: &[f64], k: usize, labels: &[usize]) -> Vec<f64> {
    probs.chunks_exact(k).zip(labels).map(|(row, &y)| 1.0 - row[y]).collect()
}

/// The LAC set of every row at quantile `q̂`.
pub fn sets(probs: &[f64], k: usize, quantile: f64) -> Vec<Vec<usize>> {
    probs
        .chunks_exact(k)
        .map(|row| (0..k).filter(|&c| (1.0 - row[c]) - quantile <= EPSILON).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_rule_keeps_classes_within_the_quantile() {
        let p = [0.7, 0.2, 0.1, 0.4, 0.35, 0.25];
        assert_eq!(super::sets(&p, 3, 0.65), vec![vec![0], vec![0, 1]]);
        // The 1e-8 slack: a class exactly at the threshold stays.
        assert_eq!(super::sets(&[0.5, 0.5], 2, 0.5), vec![vec![0, 1]]);
        assert_eq!(super::scores(&p, 3, &[1, 2]), vec![1.0 - 0.2, 1.0 - 0.25]);
    }
}
