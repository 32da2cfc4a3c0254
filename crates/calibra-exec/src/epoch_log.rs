//! Progress lines of a training run: each epoch's first step, the last step, and at least every
//! 30 s; the pace leaves out the first step (model loading, the initial evaluation).

use calibra_run::RunContext;
use calibra_train::train_images::UnreadableImage;
use calibra_train::trainer::StepReport;

/// How often a progress line is written at least, mid-epoch (a ViT-B/16 epoch on a CPU takes many
/// minutes, and a log without a line for that long looks hung).
const REPORT_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Reports progress lines of a training run, tagged `kind`: at the first step of each epoch, the last
/// step, and at least every [`REPORT_EVERY`] in between, with the loss, learning rate, images/s and
/// the time left at the current pace.
pub struct EpochLog {
    kind: &'static str,
    last_epoch: usize,
    last_line: Option<std::time::Instant>,
    /// The pace: since the first step was reported, images and steps done. The first step is left
    /// out of it, since it carries loading the model and evaluating the initial weights.
    pace: Option<(std::time::Instant, usize, usize)>,
}

impl EpochLog {
    pub fn new(kind: &'static str) -> Self {
        EpochLog { kind, last_epoch: usize::MAX, last_line: None, pace: None }
    }

    /// Counts a step; reports it when it starts an epoch, is the last, or [`REPORT_EVERY`] has passed
    /// since the last line; after an epoch of a monitored run, its training loss and the calibration
    /// split's loss, macro AUROC and accuracy.
    pub fn step(&mut self, s: &StepReport, ctx: &mut RunContext<'_>) {
        let now = std::time::Instant::now();
        let pace = match &mut self.pace {
            None => {
                self.pace = Some((now, 0, 0));
                None
            }
            Some((since, images, steps)) => {
                *images += s.images;
                *steps += 1;
                let seconds = now.duration_since(*since).as_secs_f64().max(1e-9);
                let left = seconds / *steps as f64 * (s.total_steps - s.step) as f64;
                Some((*images as f64 / seconds, left))
            }
        };
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
        let due = self.last_line.is_none_or(|t| now.duration_since(t) >= REPORT_EVERY);
        if s.epoch != self.last_epoch || s.step == s.total_steps || due {
            self.last_epoch = s.epoch;
            self.last_line = Some(now);
            let pace = pace.map_or(String::new(), |(rate, left)| {
                format!(" · {} img/s · {} left", rate_text(rate), duration_text(left))
            });
            ctx.report(&format!(
                "{}: epoch {} step {}/{} loss {:.4} lr {:.2e}{pace}",
                self.kind,
                s.epoch + 1,
                s.step,
                s.total_steps,
                s.loss,
                s.lr,
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

/// Images/s with two decimals below 10 (a CPU ViT-B/16 runs at about 1), whole above.
fn rate_text(rate: f64) -> String {
    if rate < 10.0 { format!("{rate:.2}") } else { format!("{rate:.0}") }
}

/// Seconds as `42 s`, `17 min` or `3.2 h`.
fn duration_text(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_times_read_at_every_scale() {
        assert_eq!(rate_text(0.8734), "0.87");
        assert_eq!(rate_text(628.4), "628");
        assert_eq!(duration_text(41.6), "42 s");
        assert_eq!(duration_text(1030.0), "17 min");
        assert_eq!(duration_text(11520.0), "3.2 h");
    }
}
