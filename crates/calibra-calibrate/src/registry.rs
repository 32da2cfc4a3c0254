//! From a method name (and the task of the calibration file) to a ready-to-fit [`Calibrator`].
//! Multilabel tasks get the per-label variant of `temperature`, `isotonic` and `platt`; the other
//! methods need mutually exclusive classes.

use crate::CalibrateError;
use crate::affine::Regulariser;
use crate::calibrator::{Calibrator, Method};
use crate::dirichlet::{DirichletCalibration, DirichletSelection};
use crate::isotonic::IsotonicCalibration;
use crate::matrix::MatrixScaling;
use crate::per_label::{LabelMethod, PerLabelCalibration};
use crate::platt::{PlattScaling, PlattScore};
use crate::sals::Sals;
use crate::temperature::TemperatureScaling;
use crate::vector::VectorScaling;
use calibra_predictions::Task;

/// Hyper-parameters a user may set; `None` means the method's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CalibratorOptions {
    /// Matrix scaling and Dirichlet: a fixed regulariser (Dirichlet default: cross-validated ODIR;
    /// matrix default: none).
    pub regulariser: Option<Regulariser>,
    /// Platt (binary, one-vs-rest and per-label): the score the sigmoid reads.
    pub platt_score: PlattScore,
    /// Dirichlet cross-validation folds (default 5).
    pub folds: Option<usize>,
}

/// The calibrator for `method` on a calibration file of kind `task`.
pub fn calibrator_for(
    method: Method,
    task: Task,
    options: &CalibratorOptions,
) -> Result<Box<dyn Calibrator>, CalibrateError> {
    if task == Task::Multilabel {
        let label_method = match method {
            Method::Temperature => LabelMethod::Temperature,
            Method::Isotonic => LabelMethod::Isotonic,
            Method::Platt => LabelMethod::Platt,
            other => {
                return Err(CalibrateError::Unsupported {
                    method: other.to_string(),
                    why:
                        "multilabel predictions are calibrated per label; use temperature, isotonic or platt"
                            .into(),
                });
            }
        };
        return Ok(Box::new(PerLabelCalibration { label_method, platt_score: options.platt_score }));
    }
    Ok(match method {
        Method::Temperature => Box::new(TemperatureScaling::default()),
        Method::Vector => Box::new(VectorScaling),
        Method::Matrix => {
            Box::new(MatrixScaling { regulariser: options.regulariser.unwrap_or(Regulariser::None) })
        }
        Method::Isotonic => Box::new(IsotonicCalibration),
        Method::Dirichlet => {
            let mut selection = match options.regulariser {
                Some(r) => DirichletSelection::Fixed(r),
                None => DirichletSelection::default(),
            };
            if let (DirichletSelection::CrossValidated { folds, .. }, Some(f)) =
                (&mut selection, options.folds)
            {
                *folds = f;
            }
            Box::new(DirichletCalibration { selection, ref_row: true })
        }
        Method::Platt => Box::new(PlattScaling { score: options.platt_score }),
        Method::Sals => Box::new(Sals),
        Method::Histogram => Box::new(crate::histogram::HistogramBinning::default()),
    })
}
