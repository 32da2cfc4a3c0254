//! The dry-run summary: grid size per regime, feature passes, and a cost estimate.
//!
//! # Cost model
//!
//! The unit is one **pass**: one forward pass of an encoder over one dataset's test split. With the
//! split proportions t (train), c (calibration) and e (test), a train split costs t/e passes and a
//! calibration split c/e. A backward pass is counted as two forwards (the usual rule of thumb), so one
//! training epoch over a fraction ρ of the train split costs 3·ρ·t/e passes.
//!
//! - **Feature passes** (frozen probes, CoOp and zero-shot image features), each computed once per
//!   (encoder, dataset, condition) and shared: the clean pass covers train + calibration + test,
//!   (t + c + e)/e passes, or calibration + test, (c + e)/e, when only zero-shot fits read it (they
//!   train nothing); a perturbed or shift pass covers the test split only, 1 pass (a shift target
//!   is assumed to have a test split the size of its parent's).
//! - **Frozen probe fits**: 0 (a probe on cached features costs a small fraction of a pass).
//! - **LoRA / full fits**: epochs · 3 · ρ · t/e for training, then (c + e)/e for the clean
//!   calibration and test predictions and 1 per other condition.
//! - **CoOp fits**: epochs · ρ · t/e (the image features are cached; each step runs the text tower
//!   forward and backward over the class prompts, counted as one pass per epoch over the train split).
//! - **Zero-shot** (one fit per template and seed): 0 beyond its feature passes (the text tower
//!   encodes K prompts, negligible next to an image pass).
//!
//! With `[cost] pass_seconds = s` the estimate is also given in hours (units × s / 3600). The model
//! ignores the encoders' relative sizes: read the numbers as the relative weight of the regimes, and
//! calibrate `pass_seconds` with one timed pass of the largest encoder.

use std::collections::BTreeMap;

use calibra_crs::Regime;
use serde::Serialize;

use crate::grid::{FitMethod, FitSpec, feature_passes};
use crate::recipe::Recipe;

/// Counts of one regime.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RegimeCount {
    pub fits: usize,
    pub records: usize,
    /// Cost of the fits themselves (passes; feature passes are counted apart).
    pub fit_passes: f64,
}

/// What `calibra run --dry-run` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridSummary {
    pub per_regime: BTreeMap<String, RegimeCount>,
    pub fits: usize,
    pub records: usize,
    /// Distinct (encoder, dataset, condition) feature passes.
    pub feature_passes: usize,
    /// Cost of the feature passes (passes).
    pub feature_pass_cost: f64,
    /// Total estimated cost in passes.
    pub total_passes: f64,
    /// Total estimated hours, when the recipe gives `[cost] pass_seconds`.
    pub estimated_hours: Option<f64>,
}

/// Summarises `fits` (the grid of `recipe`, possibly one shard of it).
pub fn summarize(recipe: &Recipe, fits: &[FitSpec]) -> GridSummary {
    let split = recipe.split();
    let train = split.train / split.test;
    let calibration = split.calibration / split.test;
    let mut per_regime: BTreeMap<String, RegimeCount> = BTreeMap::new();
    for fit in fits {
        let count = per_regime.entry(fit.config.regime.name().to_string()).or_default();
        count.fits += 1;
        count.records += fit.slots.len();
        let rho = fit.config.label_fraction;
        let other_conditions = fit.conditions().len().saturating_sub(1) as f64;
        let predict = (calibration + 1.0) + other_conditions;
        count.fit_passes += match &fit.config.method {
            FitMethod::Probe { .. } | FitMethod::ZeroShot { .. } => 0.0,
            FitMethod::Lora { epochs, .. } | FitMethod::Full { epochs, .. } => {
                f64::from(*epochs) * 3.0 * rho * train + predict
            }
            FitMethod::Coop { epochs, .. } => f64::from(*epochs) * rho * train,
        };
    }
    let passes = feature_passes(fits);
    // (encoder, dataset) cells whose clean pass some fit trains on (all but zero-shot).
    let trained: std::collections::BTreeSet<(&str, &str)> = fits
        .iter()
        .filter(|f| !matches!(f.config.method, FitMethod::ZeroShot { .. }))
        .map(|f| (f.config.encoder.name.as_str(), f.config.dataset.name.as_str()))
        .collect();
    let feature_pass_cost: f64 = passes
        .iter()
        .map(|p| {
            if p.condition != calibra_crs::Condition::Clean {
                1.0
            } else if trained.contains(&(p.encoder.as_str(), p.dataset.as_str())) {
                train + calibration + 1.0
            } else {
                calibration + 1.0
            }
        })
        .sum();
    let total_passes = feature_pass_cost + per_regime.values().map(|c| c.fit_passes).sum::<f64>();
    GridSummary {
        fits: fits.len(),
        records: fits.iter().map(|f| f.slots.len()).sum(),
        feature_passes: passes.len(),
        feature_pass_cost,
        total_passes,
        estimated_hours: recipe.cost.as_ref().and_then(|c| c.pass_seconds).map(|s| total_passes * s / 3600.0),
        per_regime,
    }
}

impl GridSummary {
    /// A human-readable table.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(out, "{:<10} {:>8} {:>10} {:>14}", "regime", "fits", "records", "cost (passes)");
        let order = [Regime::Frozen, Regime::Lora, Regime::Coop, Regime::Full, Regime::ZeroShot];
        for regime in order {
            if let Some(c) = self.per_regime.get(regime.name()) {
                let _ = writeln!(
                    out,
                    "{:<10} {:>8} {:>10} {:>14.1}",
                    regime.name(),
                    c.fits,
                    c.records,
                    c.fit_passes
                );
            }
        }
        let _ = writeln!(out, "{:<10} {:>8} {:>10}", "total", self.fits, self.records);
        let _ = writeln!(
            out,
            "feature passes (encoder × dataset × condition, shared by every frozen probe, fraction and seed): {} \
             costing {:.1} passes",
            self.feature_passes, self.feature_pass_cost
        );
        let _ = write!(
            out,
            "estimated cost: {:.1} passes (1 pass = one encoder forward over one test split)",
            self.total_passes
        );
        match self.estimated_hours {
            Some(h) => {
                let _ = writeln!(out, " ≈ {h:.2} h at the recipe's pass_seconds");
            }
            None => {
                let _ = writeln!(out, "; set [cost] pass_seconds for an estimate in hours");
            }
        }
        out
    }
}
