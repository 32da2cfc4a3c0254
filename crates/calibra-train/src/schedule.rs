//! Learning-rate schedules: linear warmup + cosine decay (transformers'
//! `get_cosine_schedule_with_warmup`) and Dassl/CoOp's constant-warmup `CosineAnnealingLR`.

use crate::error::TrainError;

fn check_lr(what: &str, lr: f64) -> Result<(), TrainError> {
    if !(lr.is_finite() && lr >= 0.0) {
        return Err(TrainError::BadConfig {
            what: what.into(),
            reason: format!("expected a finite number >= 0, got {lr}"),
        });
    }
    Ok(())
}

/// Linear warmup then cosine decay, per optimiser step, exactly as transformers 5.x
/// `get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5)`:
///
/// ```text
/// step < W:  lr = peak · step / max(1, W)
/// else:      p = (step − W) / max(1, T − W);   lr = peak · max(0, ½ (1 + cos(π · 2·cycles · p)))
/// ```
///
/// `lr(step)` is the rate used for optimiser step `step` (0-based), i.e. the scheduler's
/// `get_last_lr()` after `step` calls of `scheduler.step()`. So the first step has lr 0 when
/// `W > 0`, and with `cycles = 0.5` the rate reaches 0 at `step = T`. Past `T` transformers' formula
/// rises again (`cos` is not clamped to its first half-period); this mirrors it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmupCosine {
    peak_lr: f64,
    warmup_steps: usize,
    total_steps: usize,
    num_cycles: f64,
}

impl WarmupCosine {
    /// `peak_lr` finite `>= 0`; `num_cycles` 0.5 (half a cosine period: decay to 0).
    pub fn new(peak_lr: f64, warmup_steps: usize, total_steps: usize) -> Result<Self, TrainError> {
        check_lr("peak learning rate", peak_lr)?;
        Ok(Self { peak_lr, warmup_steps, total_steps, num_cycles: 0.5 })
    }

    /// Sets the number of cosine cycles (finite, `>= 0`).
    pub fn with_num_cycles(mut self, num_cycles: f64) -> Result<Self, TrainError> {
        if !(num_cycles.is_finite() && num_cycles >= 0.0) {
            return Err(TrainError::BadConfig {
                what: "num_cycles".into(),
                reason: format!("expected a finite number >= 0, got {num_cycles}"),
            });
        }
        self.num_cycles = num_cycles;
        Ok(self)
    }

    /// The multiplier of the peak rate at `step` (transformers' `lr_lambda`).
    pub fn factor(&self, step: usize) -> f64 {
        if step < self.warmup_steps {
            return step as f64 / self.warmup_steps.max(1) as f64;
        }
        let span = (self.total_steps as i128 - self.warmup_steps as i128).max(1) as f64;
        let progress = (step - self.warmup_steps) as f64 / span;
        (0.5 * (1.0 + (std::f64::consts::PI * self.num_cycles * 2.0 * progress).cos())).max(0.0)
    }

    /// The learning rate for optimiser step `step`.
    pub fn lr(&self, step: usize) -> f64 {
        self.peak_lr * self.factor(step)
    }
}

/// Dassl's `build_lr_scheduler` with `LR_SCHEDULER = "cosine"` and `WARMUP_TYPE = "constant"`
/// (the CoOp family; `WARMUP_RECOUNT = True`, Dassl's default), stepped once per epoch:
///
/// ```text
/// epoch < W:  lr = cons_lr
/// else:       lr = base · ½ (1 + cos(π · (epoch − W) / max_epoch))      (CosineAnnealingLR, η_min = 0)
/// ```
///
/// The cosine successor only starts counting after the warmup, so with `W > 0` the last epoch does
/// not reach 0. `W = 0` is the plain `CosineAnnealingLR(optimizer, T_max = max_epoch)`.
/// `lr(epoch)` is the rate used during `epoch` (0-based).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConstantWarmupCosine {
    base_lr: f64,
    max_epoch: usize,
    warmup_epochs: usize,
    warmup_lr: f64,
}

impl ConstantWarmupCosine {
    /// CoOp: `base_lr` 0.002, `max_epoch` 50 (or 200), 1 warmup epoch at 1e-5.
    pub fn new(
        base_lr: f64,
        max_epoch: usize,
        warmup_epochs: usize,
        warmup_lr: f64,
    ) -> Result<Self, TrainError> {
        check_lr("base learning rate", base_lr)?;
        check_lr("warmup learning rate", warmup_lr)?;
        if max_epoch == 0 {
            return Err(TrainError::BadConfig {
                what: "max_epoch".into(),
                reason: "expected at least 1".into(),
            });
        }
        Ok(Self { base_lr, max_epoch, warmup_epochs, warmup_lr })
    }

    /// The learning rate used during `epoch`.
    pub fn lr(&self, epoch: usize) -> f64 {
        if epoch < self.warmup_epochs {
            return self.warmup_lr;
        }
        let t = (epoch - self.warmup_epochs) as f64 / self.max_epoch as f64;
        self.base_lr * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
    }
}
