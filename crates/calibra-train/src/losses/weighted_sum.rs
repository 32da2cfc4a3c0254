//! A weighted sum of losses (`ce+mdca`, `0.5*ce+2*mdca`, ...).

use burn::tensor::Tensor;

use super::{Loss, LossBatch, TargetKind};
use crate::error::TrainError;

/// `L = Σ_t w_t · L_t`. Built by [`LossSpec::build`](super::LossSpec::build), which checks that
/// all terms use the same kind of targets.
#[derive(Debug)]
pub struct WeightedSum {
    terms: Vec<(f64, Box<dyn Loss>)>,
}

impl WeightedSum {
    /// From `(weight, loss)` pairs; errors on an empty list or a non-finite weight.
    pub fn new(terms: Vec<(f64, Box<dyn Loss>)>) -> Result<Self, TrainError> {
        if terms.is_empty() {
            return Err(TrainError::MalformedSpec { spec: String::new(), reason: "no loss terms".into() });
        }
        if let Some((w, loss)) = terms.iter().find(|(w, _)| !w.is_finite()) {
            return Err(TrainError::BadValue {
                loss: loss.name(),
                key: "weight".into(),
                value: w.to_string(),
                expected: "a finite number".into(),
            });
        }
        Ok(Self { terms })
    }

    /// The terms.
    pub fn terms(&self) -> &[(f64, Box<dyn Loss>)] {
        &self.terms
    }
}

impl Loss for WeightedSum {
    fn name(&self) -> String {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|(w, l)| if *w == 1.0 { l.name() } else { format!("{w}*{}", l.name()) })
            .collect();
        parts.join("+")
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let mut total: Option<Tensor<1>> = None;
        for (w, loss) in &self.terms {
            let value = loss.forward(batch)?;
            let value = if *w == 1.0 { value } else { value.mul_scalar(*w) };
            total = Some(match total {
                None => value,
                Some(acc) => acc.add(value),
            });
        }
        // `new` rejects an empty list.
        total.ok_or_else(|| TrainError::MalformedSpec { spec: self.name(), reason: "no loss terms".into() })
    }

    fn target_kind(&self) -> TargetKind {
        self.terms.first().map_or(TargetKind::Classes, |(_, l)| l.target_kind())
    }

    fn needs_zero_shot(&self) -> bool {
        self.terms.iter().any(|(_, l)| l.needs_zero_shot())
    }
}
