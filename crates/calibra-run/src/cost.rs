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
//!   forward and backward over the class prompts, counted as one pass per epoch over the train split);
//!   KgCoOp the same (its zero-shot text features are computed once), ProGrad twice that (it
//!   back-propagates the loss and the zero-shot distillation loss at every step).
//! - **Zero-shot** (one fit per template and seed): 0 beyond its feature passes (the text tower
//!   encodes K prompts, negligible next to an image pass).
//! - **Estimate** (one fit per layer): 0 beyond its cell's clean feature pass, which it makes cover
//!   the train split (the estimators read train-split features).
//!
//! With `[cost] pass_seconds = s` the estimate is also given in hours (units × s / 3600). The model
//! ignores the encoders' relative sizes: read the numbers as the relative weight of the regimes, and
//! calibrate `pass_seconds` with one timed pass of the largest encoder.

use std::collections::{BTreeMap, BTreeSet};

use calibra_crs::{Condition, Regime};
use serde::Serialize;

use crate::grid::{FeaturePass, FitMethod, FitSpec, feature_passes};
use crate::recipe::Recipe;
use crate::shard::ShardBalance;

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
    /// With `--shard I/N`: every shard's fits and estimated cost (the balance of the assignment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardBalance>,
}

/// The per-fit and per-feature-pass costs of one recipe (see the module docs), shared by the dry-run
/// summary and the shard assignment ([`crate::shard`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// t/e: one train split, in passes.
    train: f64,
    /// c/e: one calibration split, in passes.
    calibration: f64,
}

impl CostModel {
    /// The model of `recipe`'s split proportions.
    pub fn of(recipe: &Recipe) -> CostModel {
        let split = recipe.split();
        CostModel { train: split.train / split.test, calibration: split.calibration / split.test }
    }

    /// Cost of the fit itself (passes; its feature passes are counted apart).
    pub fn fit_passes(&self, fit: &FitSpec) -> f64 {
        let rho = fit.config.label_fraction;
        let other_conditions = fit.conditions().len().saturating_sub(1) as f64;
        let predict = (self.calibration + 1.0) + other_conditions;
        match &fit.config.method {
            FitMethod::Probe { .. } | FitMethod::ZeroShot { .. } | FitMethod::Estimate { .. } => 0.0,
            FitMethod::Lora { epochs, .. } | FitMethod::Full { epochs, .. } => {
                f64::from(*epochs) * 3.0 * rho * self.train + predict
            }
            FitMethod::Coop { epochs, method, .. } => {
                f64::from(*epochs) * rho * self.train * method.passes_per_step()
            }
        }
    }

    /// Cost of one feature pass; `trained`: some fit of its (encoder, dataset) cell trains on the
    /// clean features (any fit but zero-shot), so the clean pass covers the train split too.
    pub fn feature_pass(&self, pass: &FeaturePass, trained: bool) -> f64 {
        if pass.condition != Condition::Clean {
            1.0
        } else if trained {
            self.train + self.calibration + 1.0
        } else {
            self.calibration + 1.0
        }
    }
}

/// Whether `fit` reads cached image features (frozen probes, CoOp, zero-shot), as
/// [`feature_passes`] counts them.
fn reads_features(fit: &FitSpec) -> bool {
    matches!(
        fit.config.method,
        FitMethod::Probe { .. }
            | FitMethod::Coop { .. }
            | FitMethod::ZeroShot { .. }
            | FitMethod::Estimate { .. }
    )
}

/// Whether `fit` makes its cell's clean feature pass cover the train split (all but zero-shot).
fn trains(fit: &FitSpec) -> bool {
    !matches!(fit.config.method, FitMethod::ZeroShot { .. })
}

/// The estimated cost of a growing set of fits — exactly [`summarize`]'s `total_passes` of the same
/// fits — with the cost a fit would add ([`SetCost::added_by`]) for the shard assignment.
#[derive(Debug, Clone, Default)]
pub struct SetCost {
    passes: BTreeSet<FeaturePass>,
    trained: BTreeSet<(String, String)>,
    fit_passes: f64,
    feature_pass_cost: f64,
}

impl SetCost {
    /// Total estimated cost of the fits added so far (passes).
    pub fn total(&self) -> f64 {
        self.fit_passes + self.feature_pass_cost
    }

    /// (added fit passes, added feature-pass cost) if `fit` joined the set.
    fn delta(&self, model: &CostModel, fit: &FitSpec) -> (f64, f64) {
        let cell = (fit.config.encoder.name.clone(), fit.config.dataset.name.clone());
        let was_trained = self.trained.contains(&cell);
        let now_trained = was_trained || trains(fit);
        let mut features = 0.0;
        if reads_features(fit) {
            for condition in fit.conditions() {
                let pass = FeaturePass { encoder: cell.0.clone(), dataset: cell.1.clone(), condition };
                if !self.passes.contains(&pass) {
                    features += model.feature_pass(&pass, now_trained);
                }
            }
        }
        if now_trained && !was_trained {
            // A clean pass already counted at the calibration + test rate now covers train too.
            let clean =
                FeaturePass { encoder: cell.0.clone(), dataset: cell.1.clone(), condition: Condition::Clean };
            if self.passes.contains(&clean) {
                features += model.feature_pass(&clean, true) - model.feature_pass(&clean, false);
            }
        }
        (model.fit_passes(fit), features)
    }

    /// The cost `fit` would add to the set (passes).
    pub fn added_by(&self, model: &CostModel, fit: &FitSpec) -> f64 {
        let (fits, features) = self.delta(model, fit);
        fits + features
    }

    /// Adds `fit` to the set.
    pub fn add(&mut self, model: &CostModel, fit: &FitSpec) {
        let (fits, features) = self.delta(model, fit);
        self.fit_passes += fits;
        self.feature_pass_cost += features;
        let cell = (fit.config.encoder.name.clone(), fit.config.dataset.name.clone());
        if reads_features(fit) {
            for condition in fit.conditions() {
                self.passes.insert(FeaturePass {
                    encoder: cell.0.clone(),
                    dataset: cell.1.clone(),
                    condition,
                });
            }
        }
        if trains(fit) {
            self.trained.insert(cell);
        }
    }
}

/// Summarises `fits` (the grid of `recipe`, possibly one shard of it).
pub fn summarize(recipe: &Recipe, fits: &[FitSpec]) -> GridSummary {
    let model = CostModel::of(recipe);
    let mut per_regime: BTreeMap<String, RegimeCount> = BTreeMap::new();
    for fit in fits {
        let count = per_regime.entry(fit.config.regime.name().to_string()).or_default();
        count.fits += 1;
        count.records += fit.slots.len();
        count.fit_passes += model.fit_passes(fit);
    }
    let passes = feature_passes(fits);
    // (encoder, dataset) cells whose clean pass some fit trains on (all but zero-shot).
    let trained: BTreeSet<(&str, &str)> = fits
        .iter()
        .filter(|f| trains(f))
        .map(|f| (f.config.encoder.name.as_str(), f.config.dataset.name.as_str()))
        .collect();
    let feature_pass_cost: f64 = passes
        .iter()
        .map(|p| model.feature_pass(p, trained.contains(&(p.encoder.as_str(), p.dataset.as_str()))))
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
        shards: None,
    }
}

impl GridSummary {
    /// A human-readable table.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(out, "{:<10} {:>8} {:>10} {:>14}", "regime", "fits", "records", "cost (passes)");
        let order =
            [Regime::Frozen, Regime::Lora, Regime::Coop, Regime::Full, Regime::ZeroShot, Regime::Estimate];
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
        if let Some(b) = &self.shards {
            let _ = writeln!(out, "shards (fits assigned by estimated cost, longest first):");
            let _ = writeln!(out, "{:<10} {:>8} {:>10} {:>14}", "shard", "fits", "records", "cost (passes)");
            for s in &b.loads {
                let name = format!("{}/{}", s.index, b.count);
                let _ = writeln!(out, "{name:<10} {:>8} {:>10} {:>14.1}", s.fits, s.records, s.passes);
            }
            let empty = b.count - b.loads.len() as u64;
            if empty > 0 {
                let _ =
                    writeln!(out, "{empty} more shard(s) with no fit: the grid has fewer fits than shards");
            }
            let ratio = b.max_over_min();
            if ratio.is_finite() {
                let _ = writeln!(out, "balance: max/min estimated shard cost {ratio:.2}");
            } else {
                let _ = writeln!(out, "balance: some shard has no estimated cost (use fewer shards)");
            }
        }
        out
    }
}
