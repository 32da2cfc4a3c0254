//! Dirichlet calibration (Kull et al., NeurIPS 2019; spec §B4): the affine-softmax model on
//! log-probabilities,
//!
//! ```text
//! x_i = ln(clip(p_i, tiny, 1 − tiny)),  q_i = softmax(W x_i + b),  init W = I, b = 0
//! ```
//!
//! with the last row of `[W|b]` fixed at 0 (dirichletcal's default `ref_row=True`; the regulariser
//! acts on these re-expressed weights) and an ODIR or L2 regulariser (paper form, `reg_norm=True`,
//! see [`crate::affine`]). Solver: L-BFGS to a gradient of 1e-9 (dirichletcal uses Newton with a
//! pseudo-inverse Hessian for K ≤ 36; the objective is convex so both reach the same optimum).
//!
//! Hyper-parameters ([`DirichletSelection`]): either fixed, or chosen by k-fold cross-validated
//! log-loss over a grid. The default grid is ODIR with λ ∈ {1e-3, 1e-2, 1e-1, 1, 10} × μ ∈ {1e-3,
//! 1e-2, 1e-1, 1, 10} (normalised form), 5 folds; it is a coarse version of the paper's grid (λ, μ ∈
//! 10^a for a from −5 to 6, whose scale conventions come from a Keras implementation — spec §B4
//! treats that grid as indicative). Folds are deterministic and stratified: rows are ordered by class
//! (file order within a class) and the i-th row of that order goes to fold `i mod F`. The held-out
//! log-loss clips probabilities to [eps, 1 − eps] as sklearn's `log_loss`; ties keep the first grid
//! point (λ outer loop, μ inner loop). The final model is refitted on the whole calibration split.

use crate::CalibrateError;
use crate::affine::{AffineForm, AffineInput, AffineModel, Regulariser, default_affine_options, fit_affine};
use crate::calibrator::{Calibrator, FittedCalibrator, FittedParams, Method};
use crate::input::{check_min_samples, class_labels, log_probabilities_view};
use crate::isotonic::clipped_nll;
use crate::matrix::affine_report;
use calibra_predictions::Predictions;
use rayon::prelude::*;

/// The default λ and μ grid of the cross-validated selection.
pub const DEFAULT_GRID: [f64; 5] = [1e-3, 1e-2, 1e-1, 1.0, 10.0];

/// Default number of folds of the cross-validated selection.
pub const DEFAULT_FOLDS: usize = 5;

/// How the regulariser is chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum DirichletSelection {
    /// Use this regulariser as given.
    Fixed(Regulariser),
    /// ODIR (normalised) with (λ, μ) minimising the k-fold cross-validated log-loss.
    CrossValidated { lambdas: Vec<f64>, mus: Vec<f64>, folds: usize },
}

impl Default for DirichletSelection {
    fn default() -> Self {
        DirichletSelection::CrossValidated {
            lambdas: DEFAULT_GRID.to_vec(),
            mus: DEFAULT_GRID.to_vec(),
            folds: DEFAULT_FOLDS,
        }
    }
}

/// Dirichlet calibration (full W) with its regulariser selection.
#[derive(Debug, Clone, PartialEq)]
pub struct DirichletCalibration {
    pub selection: DirichletSelection,
    /// Fix the last row of `[W|b]` at 0 (default true, as dirichletcal).
    pub ref_row: bool,
}

impl Default for DirichletCalibration {
    fn default() -> Self {
        DirichletCalibration { selection: DirichletSelection::default(), ref_row: true }
    }
}

/// The Dirichlet model: full W on log-probabilities.
fn dirichlet_model(ref_row: bool, regulariser: Regulariser) -> AffineModel {
    AffineModel { form: AffineForm::Full, input: AffineInput::LogProbabilities, ref_row, regulariser }
}

/// One cross-validation split: training rows and held-out rows.
struct Split {
    train_x: Vec<f64>,
    train_y: Vec<usize>,
    valid_x: Vec<f64>,
    valid_y: Vec<usize>,
}

/// The fold of every row (see the module doc).
pub fn stratified_folds(labels: &[usize], folds: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&i| labels[i]); // stable: file order within a class
    let mut fold = vec![0; labels.len()];
    for (position, &i) in order.iter().enumerate() {
        fold[i] = position % folds;
    }
    fold
}

/// Cross-validated log-loss of each grid point, in grid order (λ outer, μ inner).
pub fn cross_validate(
    x: &[f64],
    k: usize,
    labels: &[usize],
    lambdas: &[f64],
    mus: &[f64],
    folds: usize,
    ref_row: bool,
) -> Vec<(Regulariser, f64)> {
    let fold = stratified_folds(labels, folds.max(2));
    let splits: Vec<Split> = (0..folds.max(2))
        .filter(|f| fold.contains(f))
        .map(|f| {
            let mut s =
                Split { train_x: Vec::new(), train_y: Vec::new(), valid_x: Vec::new(), valid_y: Vec::new() };
            for (i, &y) in labels.iter().enumerate() {
                let row = &x[i * k..(i + 1) * k];
                if fold[i] == f {
                    s.valid_x.extend_from_slice(row);
                    s.valid_y.push(y);
                } else {
                    s.train_x.extend_from_slice(row);
                    s.train_y.push(y);
                }
            }
            s
        })
        .collect();
    let options = default_affine_options();
    // Grid points are independent fits: they run on the rayon pool and are collected in grid order
    // (λ outer, μ inner), each summing its folds in fold order, so the table is the same at any
    // thread count.
    let grid: Vec<(f64, f64)> = lambdas.iter().flat_map(|&l| mus.iter().map(move |&m| (l, m))).collect();
    grid.into_par_iter()
        .map(|(lambda, mu)| {
            let regulariser = Regulariser::Odir { lambda, mu, normalised: true };
            let mut total = 0.0;
            for s in &splits {
                let fit =
                    fit_affine(&s.train_x, k, &s.train_y, &dirichlet_model(ref_row, regulariser), &options);
                let q = fit.params.predict(&s.valid_x, k);
                total += clipped_nll(&q, k, &s.valid_y) * s.valid_y.len() as f64;
            }
            (regulariser, total / labels.len() as f64)
        })
        .collect()
}

impl Calibrator for DirichletCalibration {
    fn method(&self) -> Method {
        Method::Dirichlet
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let labels = class_labels(calibration, Method::Dirichlet)?;
        check_min_samples(calibration, Method::Dirichlet)?;
        let k = calibration.num_classes();
        let x = log_probabilities_view(calibration);
        let mut notes = Vec::new();
        let regulariser = match &self.selection {
            DirichletSelection::Fixed(r) => *r,
            DirichletSelection::CrossValidated { lambdas, mus, folds } => {
                if lambdas.is_empty() || mus.is_empty() {
                    return Err(CalibrateError::InvalidInput("the Dirichlet λ/μ grid is empty".into()));
                }
                let table = cross_validate(&x, k, labels, lambdas, mus, *folds, self.ref_row);
                let (best, loss) = table
                    .iter()
                    .fold(None::<(Regulariser, f64)>, |acc, &(r, l)| match acc {
                        Some((_, bl)) if bl <= l => acc,
                        _ => Some((r, l)),
                    })
                    .expect("non-empty grid");
                notes.push(format!(
                    "ODIR (λ, μ) chosen by {}-fold cross-validated log-loss over {} grid points: {best:?} \
                     with held-out log-loss {loss:.6}",
                    folds.max(&2),
                    table.len()
                ));
                best
            }
        };
        let fit =
            fit_affine(&x, k, labels, &dirichlet_model(self.ref_row, regulariser), &default_affine_options());
        let mut report = affine_report(calibration, labels, &fit, false);
        report.notes = notes;
        Ok(FittedCalibrator::new(Method::Dirichlet, calibration, FittedParams::Dirichlet(fit.params), report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_are_stratified_and_cover_every_fold() {
        let labels = [0, 1, 0, 1, 0, 1, 0, 1, 2, 2];
        let f = stratified_folds(&labels, 5);
        for fold in 0..5 {
            assert_eq!(f.iter().filter(|&&x| x == fold).count(), 2);
        }
        // Two rows, two classes → two different folds.
        assert_ne!(stratified_folds(&[1, 0], 5)[0], stratified_folds(&[1, 0], 5)[1]);
    }
}
