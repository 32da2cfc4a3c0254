//! The `prior` baseline executor: the frozen-regime probe that ignores the image and predicts the
//! class frequencies of its training subset. It needs no encoder and no burn, so `calibra run` can run
//! (and a test can kill and resume) a real grid today; it is also the floor every probe must beat.
//!
//! # Model
//!
//! For a fit (dataset, split, label fraction ρ, seed): the split comes from
//! `calibra_data::split_dataset` with the recipe's `[split]`, the training subset from
//! `calibra_data::label_fraction(ρ, seed)` (stratified, nested, every class kept). Then
//! - single-label tasks: `p_k = (n_k + 1) / (n + K)` (add-one smoothing, so no class has probability
//!   0), written as logits `ln p_k`;
//! - multilabel tasks: per label `p_l = (pos_l + 1) / (obs_l + 2)` over the rows where label l is
//!   observed, written as logits `ln(p_l / (1 − p_l))`.
//!
//! Every test row gets the same prediction, so AUROC is 0.5 wherever defined (all scores tie). The
//! predictions do not depend on the pixels, so a perturbed test split gets exactly the clean split's
//! predictions (honestly: this model is perfectly robust and uninformative). A shift target is
//! predicted on its own test split (same `[split]`); its label names must equal the dataset's.
//!
//! Calibrators, metrics and records are the runner's, as for every fitted model
//! ([`crate::slot_outputs`]).

use calibra_crs::Regime;
use calibra_data::{Dataset, RowTargets};

use crate::datasets::{DatasetCache, split_of};
use crate::executor::{ExecError, Executor, RunContext};
use crate::fitted::{FitOutcome, Fitted, PredictRequest};
use crate::grid::{FitMethod, FitSpec};

/// The `prior` probe's executor (see the module docs). Datasets are loaded once per spec and kept.
#[derive(Default)]
pub struct BaselineExecutor {
    datasets: DatasetCache,
}

/// The fitted prior: one logits row, predicted for every sample.
struct Prior {
    logits: Vec<f64>,
}

impl Fitted for Prior {
    fn kind(&self) -> &str {
        "prior"
    }

    fn predict(&self, request: &PredictRequest<'_>, _: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError> {
        Ok(request.rows.iter().flat_map(|_| self.logits.iter().copied()).collect())
    }
}

/// The prior's logits (one row, K columns) from the training rows: Laplace-smoothed log class
/// frequencies, or per label the log-odds of the smoothed positive rate over the observed rows.
fn prior_logits(dataset: &Dataset, rows: &[usize]) -> Result<Vec<f64>, ExecError> {
    let k = dataset.labels.len();
    Ok(match dataset.row_targets(rows)? {
        RowTargets::Classes(classes) => {
            let mut counts = vec![0usize; k];
            for c in classes {
                counts[c] += 1;
            }
            let n = rows.len() as f64;
            counts.iter().map(|&c| ((c as f64 + 1.0) / (n + k as f64)).ln()).collect()
        }
        RowTargets::Labels(table) => (0..k)
            .map(|l| {
                let observed = table.chunks_exact(k).filter_map(|row| row[l]);
                let (pos, obs) = observed.fold((0usize, 0usize), |(p, o), t| (p + usize::from(t), o + 1));
                let p = (pos as f64 + 1.0) / (obs as f64 + 2.0);
                (p / (1.0 - p)).ln()
            })
            .collect(),
    })
}

impl Executor for BaselineExecutor {
    fn supports(&self, fit: &FitSpec) -> Result<(), String> {
        match (&fit.config.method, fit.config.regime) {
            (FitMethod::Probe { probe, .. }, Regime::Frozen) if probe == "prior" => Ok(()),
            (_, regime) => Err(format!(
                "regime {regime} / {} needs the burn executors, which are not wired into `calibra run` yet; \
                 this build runs the `prior` probe only",
                fit.config.probe
            )),
        }
    }

    fn fit<'e>(&'e self, fit: &FitSpec, _: &mut RunContext<'_>) -> Result<FitOutcome<'e>, ExecError> {
        let c = &fit.config;
        let dataset = self.datasets.get(&c.dataset.spec)?;
        let split = split_of(&dataset, &c.split)?;
        let train = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
        Ok(FitOutcome::Model(Box::new(Prior { logits: prior_logits(&dataset, &train)? })))
    }

    fn datasets(&self) -> Option<&DatasetCache> {
        Some(&self.datasets)
    }
}
