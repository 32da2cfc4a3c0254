//! Vector scaling (Guo et al. 2017; spec §B2): `q = softmax(w ⊙ z + b)`, w, b ∈ R^K, init w = 1,
//! b = 0, mean NLL minimised by L-BFGS with the analytic gradient ([`crate::affine`]). Unlike
//! temperature scaling it may change the argmax. Fitted on logits (ln(p + 1e-12) for stored
//! probabilities, with a `probability-input` warning: the per-class weights then act on
//! log-probabilities).

use crate::CalibrateError;
use crate::affine::{AffineForm, AffineInput, AffineModel, Regulariser, default_affine_options, fit_affine};
use crate::calibrator::{Calibrator, FittedCalibrator, FittedParams, Method};
use crate::input::{check_min_samples, class_labels, logits_view};
use crate::matrix::affine_report;
use calibra_predictions::Predictions;

/// Vector scaling (no regulariser).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VectorScaling;

impl Calibrator for VectorScaling {
    fn method(&self) -> Method {
        Method::Vector
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let labels = class_labels(calibration, Method::Vector)?;
        check_min_samples(calibration, Method::Vector)?;
        let k = calibration.num_classes();
        let x = logits_view(calibration);
        let model = AffineModel {
            form: AffineForm::Diagonal,
            input: AffineInput::Logits,
            ref_row: false,
            regulariser: Regulariser::None,
        };
        let fit = fit_affine(&x, k, labels, &model, &default_affine_options());
        let report = affine_report(calibration, labels, &fit, true);
        Ok(FittedCalibrator::new(Method::Vector, calibration, FittedParams::Vector(fit.params), report))
    }
}
