//! Matrix scaling (Guo et al. 2017; spec §B2): `q = softmax(W z + b)`, W ∈ R^{K×K}, init W = I,
//! b = 0, on logits, L-BFGS with the analytic gradient ([`crate::affine`]). The last row of `[W|b]`
//! is fixed at 0 (dirichletcal `MatrixScaling(logit_input=True)` uses `ref_row=True`; predictions of
//! an unregularised fit are unchanged by it). Optional ODIR regularisation (Kull et al. 2019) — MS
//! overfits for large K without it; unregularised fits of separable data have no finite optimum and
//! stop when the NLL stops decreasing. May change the argmax.

use crate::CalibrateError;
use crate::affine::{
    AffineFit, AffineForm, AffineInput, AffineModel, Regulariser, default_affine_options, fit_affine,
};
use crate::calibrator::{Calibrator, FitReport, FitWarning, FittedCalibrator, FittedParams, Method};
use crate::input::{check_min_samples, class_labels, logits_view, missing_class_warnings};
use calibra_predictions::{Predictions, ScoreKind};

/// Matrix scaling with an optional regulariser (default: none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatrixScaling {
    pub regulariser: Regulariser,
}

impl Default for MatrixScaling {
    fn default() -> Self {
        MatrixScaling { regulariser: Regulariser::None }
    }
}

impl Calibrator for MatrixScaling {
    fn method(&self) -> Method {
        Method::Matrix
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let labels = class_labels(calibration, Method::Matrix)?;
        check_min_samples(calibration, Method::Matrix)?;
        let k = calibration.num_classes();
        let x = logits_view(calibration);
        let model = AffineModel {
            form: AffineForm::Full,
            input: AffineInput::Logits,
            ref_row: true,
            regulariser: self.regulariser,
        };
        let fit = fit_affine(&x, k, labels, &model, &default_affine_options());
        let report = affine_report(calibration, labels, &fit, true);
        Ok(FittedCalibrator::new(Method::Matrix, calibration, FittedParams::Matrix(fit.params), report))
    }
}

/// The fit report of an affine-softmax fit: NLL before/after, iterations, convergence, missing classes
/// and (for logit-input methods fitted on a probability file) a `probability-input` warning.
pub(crate) fn affine_report(
    calibration: &Predictions,
    labels: &[usize],
    fit: &AffineFit,
    reads_logits: bool,
) -> FitReport {
    let mut warnings = missing_class_warnings(
        labels,
        calibration.class_names(),
        "without regularisation its bias is pushed toward −∞ (the fit may not converge and the class gets \
         ≈ 0 probability); a regulariser keeps it finite",
    );
    if reads_logits && calibration.score_kind() == ScoreKind::Probability {
        warnings.push(FitWarning::new(
            "probability-input",
            "the calibration file stores probabilities; the method is fitted on ln(p + 1e-12) in place of logits",
        ));
    }
    if !fit.converged {
        warnings.push(FitWarning::new(
            "not-converged",
            format!(
                "L-BFGS stopped after {} iterations before reaching its gradient tolerance",
                fit.iterations
            ),
        ));
    }
    FitReport {
        samples: calibration.len(),
        nll_before: Some(fit.nll_before),
        nll_after: Some(fit.nll_after),
        iterations: Some(fit.iterations),
        converged: Some(fit.converged),
        warnings,
        notes: Vec::new(),
    }
}
