//! How well did an estimator's predicted ranking match the ranking after adaptation?
//! Kendall τ-b, Spearman ρ and weighted τ come from calibra-metrics (scipy parity there);
//! top-3 regret is the gap between the best adapted score and the best adapted score among the
//! three candidates the estimator ranks highest (0 = the shortlist contains the winner), in the
//! units of the adapted metric (e.g. AUROC points when given AUROC × 100).

use crate::TransferError;

/// Agreement of a predicted score (higher = predicted better) with an adapted score (higher = better).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankingAgreement {
    pub kendall_tau_b: f64,
    pub spearman_rho: f64,
    pub weighted_tau: f64,
    pub top3_regret: f64,
}

/// Compare `predicted` with `adapted` (same candidate order; both finite; at least 2 candidates).
/// Undefined correlations (a constant input) are NaN, as scipy; serialise them as `null`.
pub fn ranking_agreement(predicted: &[f64], adapted: &[f64]) -> Result<RankingAgreement, TransferError> {
    if predicted.len() != adapted.len() || predicted.len() < 2 {
        return Err(TransferError::Ranker(format!(
            "{} predicted and {} adapted scores: need the same number, at least 2",
            predicted.len(),
            adapted.len()
        )));
    }
    if let Some(i) = predicted.iter().chain(adapted).position(|v| !v.is_finite()) {
        return Err(TransferError::Ranker(format!("candidate {}: score is not finite", i % predicted.len())));
    }
    let mut order: Vec<usize> = (0..predicted.len()).collect();
    order.sort_by(|&a, &b| predicted[b].total_cmp(&predicted[a]).then(a.cmp(&b)));
    let best = adapted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let shortlist = order.iter().take(3).map(|&i| adapted[i]).fold(f64::NEG_INFINITY, f64::max);
    Ok(RankingAgreement {
        kendall_tau_b: calibra_metrics::kendall_tau_b(predicted, adapted),
        spearman_rho: calibra_metrics::spearman_rho(predicted, adapted),
        weighted_tau: calibra_metrics::weighted_tau(predicted, adapted),
        top3_regret: best - shortlist,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_and_reversed_rankings() {
        let adapted = [0.9, 0.8, 0.7, 0.6, 0.5];
        let p = ranking_agreement(&[5.0, 4.0, 3.0, 2.0, 1.0], &adapted).unwrap();
        for v in [p.kendall_tau_b, p.spearman_rho, p.weighted_tau] {
            assert!((v - 1.0).abs() < 1e-12, "{v}");
        }
        assert_eq!(p.top3_regret, 0.0);
        let r = ranking_agreement(&[1.0, 2.0, 3.0, 4.0, 5.0], &adapted).unwrap();
        assert!((r.kendall_tau_b + 1.0).abs() < 1e-12 && (r.spearman_rho + 1.0).abs() < 1e-12);
        // The shortlist is candidates 4, 3, 2: best adapted among them 0.7, regret 0.2.
        assert!((r.top3_regret - 0.2).abs() < 1e-12);
        assert!(ranking_agreement(&[1.0], &[1.0]).is_err());
        assert!(ranking_agreement(&[1.0, f64::NAN], &[1.0, 2.0]).is_err());
    }
}
