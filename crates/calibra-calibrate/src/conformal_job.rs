//! `calibra calibrate --method lac|thr|aps|raps`: split conformal prediction sets fitted on one
//! predictions file and made for another, as a CSV (single-label: `id,label,set` with the set's class
//! indices separated by spaces; multilabel: `id,set_<label>...`, each a subset of {0, 1}) and a
//! coverage and size report. Nothing is written here: the caller writes the CSV.

use std::path::PathBuf;

use calibra_predictions::{Predictions, PredictionsError, Targets, read_predictions};
use serde::Serialize;
use thiserror::Error;

use crate::calibration_job::{CalibrationJobError, check_same_classes};
use crate::{
    CalibrateError, ConformalMethod, ConformalPredictor, SetCoverage, fit_multilabel,
    multilabel_set_coverage, predict_multilabel, set_coverage, uniform_draws,
};

/// The test draws come from a stream independent of the calibration draws.
const TEST_STREAM: u64 = 0xD1B5_4A32_D192_ED03;

/// Why prediction sets could not be made; names the file.
#[derive(Debug, Error)]
pub enum ConformalJobError {
    /// Fitting or predicting the sets failed (`context` says which step, method and file).
    #[error("{context}")]
    Sets { context: String, source: CalibrateError },
    #[error("writing the prediction sets of {file} as CSV: {message}")]
    Csv { file: String, message: String },
    #[error(transparent)]
    Classes(#[from] CalibrationJobError),
    #[error(transparent)]
    Predictions(#[from] PredictionsError),
}

/// One conformal job: fit at level `alpha` on `calibration`, make sets for `test`.
#[derive(Debug, Clone)]
pub struct ConformalJob {
    pub method: ConformalMethod,
    /// Miscoverage level α in (0, 1).
    pub alpha: f64,
    /// Seed of the uniform draws that randomise APS / RAPS.
    pub seed: u64,
    pub calibration: PathBuf,
    pub test: PathBuf,
}

/// The coverage and size report of conformal sets (`--report`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetReport {
    pub method: ConformalMethod,
    pub alpha: f64,
    pub seed: u64,
    pub calibration_samples: usize,
    /// `q̂` (multilabel: one per label, in column order).
    pub quantiles: Vec<f64>,
    pub samples: usize,
    /// Fraction of rows (multilabel: of observed (row, label) cells) whose set holds the label.
    pub coverage: f64,
    /// Coverage per true class (multilabel: per label); `null` without rows.
    pub class_coverage: Vec<(String, Option<f64>)>,
    pub mean_set_size: f64,
    pub empty_fraction: f64,
}

/// The sets as CSV bytes and their report.
#[derive(Debug, Clone)]
pub struct ConformalOutcome {
    pub csv: Vec<u8>,
    pub report: SetReport,
}

impl ConformalJob {
    /// Read both files, check they have the same classes, fit the sets and make them.
    pub fn run(&self) -> Result<ConformalOutcome, ConformalJobError> {
        let (method, alpha, seed) = (self.method, self.alpha, self.seed);
        let cal = read_predictions(&self.calibration)?;
        let test = read_predictions(&self.test)?;
        check_same_classes(&self.calibration, &cal, &self.test, &test)?;
        let (cal_file, test_file) = (self.calibration.display().to_string(), self.test.display().to_string());
        let k = cal.num_classes();
        let names = cal.class_names().to_vec();
        let (csv, quantiles, cov) = match (cal.targets(), test.targets()) {
            (Targets::Classes(cal_y), Targets::Classes(test_y)) => {
                let fitted = ConformalPredictor::fit(
                    method,
                    &cal.probabilities(),
                    k,
                    cal_y,
                    alpha,
                    &uniform_draws(seed, cal.len()),
                )
                .map_err(|source| ConformalJobError::Sets {
                    context: format!("fitting {method} sets on {cal_file}"),
                    source,
                })?;
                let sets = fitted
                    .predict(&test.probabilities(), k, &uniform_draws(seed ^ TEST_STREAM, test.len()))
                    .map_err(|source| ConformalJobError::Sets {
                        context: format!("making {method} sets for {test_file}"),
                        source,
                    })?;
                let cov = set_coverage(&sets, test_y, k);
                (single_label_csv(&test, test_y, &sets), vec![fitted.quantile], cov)
            }
            (Targets::Labels(cal_t), Targets::Labels(test_t)) => {
                let fitted = fit_multilabel(method, &cal.probabilities(), k, cal_t, alpha, &names).map_err(
                    |source| ConformalJobError::Sets {
                        context: format!("fitting per-label {method} sets on {cal_file}"),
                        source,
                    },
                )?;
                let sets = predict_multilabel(&fitted, &test.probabilities(), k);
                let cov = multilabel_set_coverage(&sets, test_t, k);
                (multilabel_csv(&test, &names, &sets), fitted.iter().map(|f| f.quantile).collect(), cov)
            }
            // check_same_classes compared the tasks.
            _ => unreachable!("check_same_classes compares the tasks"),
        };
        let csv = csv.map_err(|message| ConformalJobError::Csv { file: test_file, message })?;
        let report = report_of(self, cal.len(), quantiles, &test, &cov, &names);
        Ok(ConformalOutcome { csv, report })
    }
}

fn join(set: &[usize]) -> String {
    set.iter().map(usize::to_string).collect::<Vec<_>>().join(" ")
}

fn finish(w: csv::Writer<Vec<u8>>) -> Result<Vec<u8>, String> {
    w.into_inner().map_err(|e| e.into_error().to_string())
}

fn single_label_csv(test: &Predictions, labels: &[usize], sets: &[Vec<usize>]) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["id", "label", "set"]).map_err(|e| e.to_string())?;
    for ((id, y), set) in test.ids().iter().zip(labels).zip(sets) {
        w.write_record([id.as_str(), &y.to_string(), &join(set)]).map_err(|e| e.to_string())?;
    }
    finish(w)
}

fn multilabel_csv(test: &Predictions, names: &[String], sets: &[Vec<Vec<usize>>]) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["id".to_string()];
    header.extend(names.iter().map(|n| format!("set_{n}")));
    w.write_record(&header).map_err(|e| e.to_string())?;
    for (id, row) in test.ids().iter().zip(sets) {
        let mut record = vec![id.clone()];
        record.extend(row.iter().map(|s| join(s)));
        w.write_record(&record).map_err(|e| e.to_string())?;
    }
    finish(w)
}

fn report_of(
    job: &ConformalJob,
    calibration_samples: usize,
    quantiles: Vec<f64>,
    test: &Predictions,
    cov: &SetCoverage,
    names: &[String],
) -> SetReport {
    SetReport {
        method: job.method,
        alpha: job.alpha,
        seed: job.seed,
        calibration_samples,
        quantiles,
        samples: test.len(),
        coverage: cov.coverage,
        class_coverage: names.iter().cloned().zip(cov.class_coverage.iter().copied()).collect(),
        mean_set_size: cov.mean_set_size,
        empty_fraction: cov.empty_fraction,
    }
}
