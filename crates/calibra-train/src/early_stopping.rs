//! Early stopping on a held-out loss: the epoch with the lowest loss so far is the best one, and
//! training stops once `patience` epochs in a row have not improved on it. The caller keeps the best
//! epoch's weights and restores them at the end (Hugging Face's `load_best_model_at_end` with
//! `metric_for_best_model = "loss"`, `EarlyStoppingCallback(patience)`, threshold 0).
//!
//! One implementation for every trainer: the image trainer (`trainer`) uses it on the calibration
//! split; any other loop that evaluates once per epoch can drive it the same way.

use serde::{Deserialize, Serialize};

/// What [`EarlyStopping::observe`] concluded about an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The epoch's loss is the lowest so far: keep its weights.
    Improved,
    /// Not better than the best, but patience is not used up: keep training.
    Worse,
    /// `patience` epochs in a row without improvement: stop now (restore the best weights).
    Stop,
}

/// The state of early stopping (serde, so a checkpoint can carry it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlyStopping {
    /// Epochs without improvement tolerated before stopping (`>= 1`).
    pub patience: usize,
    /// The best epoch (1-based) and its loss, once one epoch was observed.
    pub best: Option<(usize, f64)>,
    /// Epochs in a row since the best one.
    pub bad_epochs: usize,
}

impl EarlyStopping {
    /// Stop after `patience` (`>= 1`, clamped) epochs without improvement.
    pub fn new(patience: usize) -> Self {
        EarlyStopping { patience: patience.max(1), best: None, bad_epochs: 0 }
    }

    /// Record epoch `epoch`'s held-out loss. A loss improves only when strictly lower than the best
    /// (ties keep the earlier epoch); a non-finite loss never improves.
    pub fn observe(&mut self, epoch: usize, loss: f64) -> Verdict {
        let better = loss.is_finite() && self.best.is_none_or(|(_, best)| loss < best);
        if better {
            self.best = Some((epoch, loss));
            self.bad_epochs = 0;
            return Verdict::Improved;
        }
        self.bad_epochs += 1;
        if self.bad_epochs >= self.patience { Verdict::Stop } else { Verdict::Worse }
    }

    /// The best epoch so far (1-based).
    pub fn best_epoch(&self) -> Option<usize> {
        self.best.map(|(e, _)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_after_patience_epochs_without_improvement_and_remembers_the_best() {
        let mut es = EarlyStopping::new(2);
        assert_eq!(es.observe(1, 0.9), Verdict::Improved);
        assert_eq!(es.observe(2, 0.7), Verdict::Improved);
        assert_eq!(es.observe(3, 0.7), Verdict::Worse, "a tie is not an improvement");
        assert_eq!(es.observe(4, 0.6), Verdict::Improved, "an improvement resets the count");
        assert_eq!(es.observe(5, 0.8), Verdict::Worse);
        assert_eq!(es.observe(6, 0.65), Verdict::Stop);
        assert_eq!(es.best_epoch(), Some(4));
    }

    #[test]
    fn a_non_finite_loss_never_becomes_the_best() {
        let mut es = EarlyStopping::new(1);
        assert_eq!(es.observe(1, f64::NAN), Verdict::Stop);
        assert_eq!(es.best_epoch(), None);
        let mut es = EarlyStopping::new(3);
        es.observe(1, 0.5);
        es.observe(2, f64::INFINITY);
        assert_eq!(es.best_epoch(), Some(1));
    }
}
