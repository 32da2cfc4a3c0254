//! Progress lines of a training run: one per epoch (and the last step).

use calibra_run::RunContext;
use calibra_train::train_images::UnreadableImage;
use calibra_train::trainer::StepReport;

/// Reports one progress line per epoch (and the last step) of a training run, tagged `kind`:
/// loss, learning rate, images/s and the time left at the current pace.
pub struct EpochLog {
    kind: &'static str,
    last_epoch: usize,
    started: std::time::Instant,
    images: usize,
    steps: usize,
}

impl EpochLog {
    pub fn new(kind: &'static str) -> Self {
        EpochLog { kind, last_epoch: usize::MAX, started: std::time::Instant::now(), images: 0, steps: 0 }
    }

    /// Counts a step; reports it when it starts an epoch or is the last, and after an epoch of a
    /// monitored run its training loss and the calibration split's loss, macro AUROC and accuracy.
    pub fn step(&mut self, s: &StepReport, ctx: &mut RunContext<'_>) {
        self.images += s.images;
        self.steps += 1;
        if let Some(e) = s.epoch_end {
            let auroc = e.held_out_auroc.map_or("n/a (one class)".to_string(), |a| format!("{a:.3}"));
            let accuracy = e.held_out_accuracy.map_or("n/a".to_string(), |a| format!("{a:.3}"));
            ctx.report(&format!(
                "{}: epoch {} done: train loss {:.4} · calibration loss {:.4}, AUROC {auroc}, accuracy \
                 {accuracy}",
                self.kind,
                s.epoch + 1,
                e.train_loss,
                e.held_out_loss,
            ));
        }
        if s.epoch != self.last_epoch || s.step == s.total_steps {
            self.last_epoch = s.epoch;
            let seconds = self.started.elapsed().as_secs_f64().max(1e-9);
            let left = seconds / self.steps as f64 * (s.total_steps - s.step) as f64;
            ctx.report(&format!(
                "{}: epoch {} step {}/{} loss {:.4} lr {:.2e} · {:.0} img/s · {:.0} s left",
                self.kind,
                s.epoch + 1,
                s.step,
                s.total_steps,
                s.loss,
                s.lr,
                self.images as f64 / seconds,
                left
            ));
        }
    }

    /// Reports the training images left out because they could not be read (`on_bad_image=skip`):
    /// how many, and each of them (the first ten, then a count).
    pub fn unreadable(&self, ctx: &mut RunContext<'_>, unreadable: &[UnreadableImage]) {
        const LISTED: usize = 10;
        if unreadable.is_empty() {
            return;
        }
        ctx.report(&format!(
            "{}: {} training image(s) could not be read and were left out of every batch (on_bad_image=skip)",
            self.kind,
            unreadable.len()
        ));
        for u in unreadable.iter().take(LISTED) {
            ctx.report(&format!("{}:   {u}", self.kind));
        }
        if unreadable.len() > LISTED {
            ctx.report(&format!("{}:   ... and {} more", self.kind, unreadable.len() - LISTED));
        }
    }

    /// Reports the resume point if there was one.
    pub fn resumed(&self, ctx: &mut RunContext<'_>, resumed_from: Option<usize>) {
        if let Some(step) = resumed_from {
            ctx.report(&format!("{}: resumed from the checkpoint at step {step}", self.kind));
        }
    }
}
