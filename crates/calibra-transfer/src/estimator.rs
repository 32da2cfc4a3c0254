//! The estimator names, exactly as `calibra transfer score --estimators` and the JSON `scores` keys
//! spell them.

use crate::TransferError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Estimator {
    Logme,
    Hscore,
    HscoreShrinkage,
    Gbc,
    Nleep,
    Transrate,
    EffectiveDimensionality,
    KnnAgreement,
}

impl Estimator {
    pub const ALL: [Estimator; 8] = [
        Estimator::Logme,
        Estimator::Hscore,
        Estimator::HscoreShrinkage,
        Estimator::Gbc,
        Estimator::Nleep,
        Estimator::Transrate,
        Estimator::EffectiveDimensionality,
        Estimator::KnnAgreement,
    ];

    pub const NAMES: [&'static str; 8] = [
        "logme",
        "hscore",
        "hscore_shrinkage",
        "gbc",
        "nleep",
        "transrate",
        "effective_dimensionality",
        "knn_agreement",
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES[Self::ALL.iter().position(|e| *e == self).expect("in ALL")]
    }

    pub fn parse(s: &str) -> Result<Self, TransferError> {
        Self::NAMES
            .iter()
            .position(|n| *n == s.trim())
            .map(|i| Self::ALL[i])
            .ok_or_else(|| TransferError::UnknownEstimator(s.trim().to_string()))
    }

    /// Parse a comma-separated list (duplicates removed, order kept).
    pub fn parse_list(s: &str) -> Result<Vec<Self>, TransferError> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let e = Self::parse(part)?;
            if !out.contains(&e) {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Does this estimator use the class structure (and so need ≥ 2 classes)?
    pub fn is_class_based(self) -> bool {
        !matches!(self, Estimator::Logme | Estimator::EffectiveDimensionality)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_an_error() {
        for e in Estimator::ALL {
            assert_eq!(Estimator::parse(e.name()).unwrap(), e);
        }
        assert_eq!(Estimator::parse_list("gbc, logme,gbc").unwrap(), vec![Estimator::Gbc, Estimator::Logme]);
        let err = Estimator::parse("leep").unwrap_err().to_string();
        assert!(err.contains("`leep`") && err.contains("knn_agreement"), "{err}");
    }
}
