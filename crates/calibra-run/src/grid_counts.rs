//! The numbers a progress display of a grid shows: fits done of the total, failures, fits per
//! second, the estimated time left, and the fit that runs now.

use std::time::Instant;

use crate::grid::FitSpec;

/// Counts of a running grid, updated from [`crate::Progress`] events.
#[derive(Debug, Clone)]
pub struct GridCounts {
    started: Instant,
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    /// The description of the fit that runs now.
    pub current: String,
}

impl Default for GridCounts {
    fn default() -> Self {
        GridCounts { started: Instant::now(), total: 0, done: 0, failed: 0, current: String::new() }
    }
}

impl GridCounts {
    /// A fit starts (`done` of `total` handled); the clock restarts with the first fit.
    pub fn fit_started(&mut self, done: usize, total: usize, fit: &FitSpec) {
        if done == 0 {
            self.started = Instant::now();
        }
        self.total = total;
        self.current = fit.describe();
    }

    /// A fit finished (or failed).
    pub fn fit_done(&mut self, failed: bool) {
        self.failed += usize::from(failed);
        self.done += 1;
    }

    /// `12/340 fits, 0.85 fits/s, ETA 6m 26s, 1 failed`.
    pub fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 { self.done as f64 / secs } else { 0.0 };
        let eta = if rate > 0.0 {
            let left = ((self.total - self.done.min(self.total)) as f64 / rate).round() as u64;
            format!("{}m {:02}s", left / 60, left % 60)
        } else {
            "unknown".to_string()
        };
        format!("{}/{} fits, {rate:.2} fits/s, ETA {eta}, {} failed", self.done, self.total, self.failed)
    }
}
