//! One call that computes the requested estimators on one feature matrix and target, sharing the
//! expensive pieces (one centred Gram matrix and its eigen-decomposition serve LogME, both H-scores,
//! the PCA of GBC and NLEEP, TransRate and the participation ratio), and says why any estimator is
//! undefined (`None`, JSON `null`).
//!
//! Targets: classes as given; ordinal grades as classes, except LogME (the grade as a continuous
//! target) and k-NN agreement (Spearman); continuous outcomes through quintile classes, except
//! LogME (the outcome itself) and k-NN agreement (Spearman); multilabel: every estimator per label on
//! the rows where the label is known (a binary task), then the mean over labels where it is defined.
//!
//! Undefined: fewer than 2 classes present → every class-based estimator; a class with fewer than 2
//! samples → GBC (a one-sample class has no variance; the reference would silently use its 1e-4
//! floor); a class in `0..C` with no sample → TransRate (the reference divides by zero); more GMM
//! components (`5·C`) than samples → NLEEP; constant features → effective dimensionality; k-NN with a
//! single row, or a constant outcome under Spearman → k-NN agreement.

use std::collections::BTreeMap;

use crate::gbc::{GbcOptions, gbc};
use crate::hscore::{HSCORE_RCOND, hscore};
use crate::hscore_shrinkage::hscore_shrinkage;
use crate::knn::{DEFAULT_K, cosine_neighbours, label_agreement, outcome_agreement};
use crate::logme::LogmeBasis;
use crate::nleep::{NleepOptions, nleep};
use crate::quintile::quintile_classes;
use crate::transrate::{TRANSRATE_EPS, transrate};
use crate::{ClassStats, Covariance, Estimator, Features, Targets, TransferError, participation_ratio};

/// Settings of every estimator (defaults: the references' defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreOptions {
    pub gbc: GbcOptions,
    pub nleep: NleepOptions,
    pub knn_k: usize,
    pub transrate_eps: f64,
    pub hscore_rcond: f64,
}

impl Default for ScoreOptions {
    fn default() -> Self {
        Self {
            gbc: GbcOptions::default(),
            nleep: NleepOptions::default(),
            knn_k: DEFAULT_K,
            transrate_eps: TRANSRATE_EPS,
            hscore_rcond: HSCORE_RCOND,
        }
    }
}

/// The estimators' values and the reasons for any `null`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScoreReport {
    pub n: usize,
    pub d: usize,
    pub num_classes: usize,
    pub scores: BTreeMap<String, Option<f64>>,
    /// One line per undefined estimator, e.g. `gbc: class 3 has 1 sample (needs ≥ 2)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Compute `estimators` on `features` under `targets`.
pub fn score(
    features: &Features,
    targets: &Targets,
    estimators: &[Estimator],
    options: &ScoreOptions,
) -> Result<ScoreReport, TransferError> {
    targets.validate(features.n())?;
    let mut notes = Vec::new();
    let values: BTreeMap<Estimator, Option<f64>> = match targets {
        Targets::Classes(y) => score_task(features, y, None, estimators, options, &mut notes, "")?,
        Targets::Ordinal(y) => {
            let cont: Vec<f64> = y.iter().map(|&g| g as f64).collect();
            score_task(features, y, Some(&cont), estimators, options, &mut notes, "")?
        }
        Targets::Continuous(v) => {
            let y = quintile_classes(v);
            score_task(features, &y, Some(v), estimators, options, &mut notes, "")?
        }
        Targets::Multilabel { labels, values } => {
            let mut sums: BTreeMap<Estimator, (f64, usize)> = BTreeMap::new();
            for l in 0..*labels {
                let idx: Vec<usize> =
                    (0..features.n()).filter(|&i| values[i * labels + l].is_some()).collect();
                let y: Vec<usize> =
                    idx.iter().map(|&i| usize::from(values[i * labels + l] == Some(true))).collect();
                let prefix = format!("label {l}: ");
                let per = if idx.is_empty() {
                    notes.push(format!("{prefix}no known values; skipped"));
                    continue;
                } else {
                    score_task(&features.select(&idx), &y, None, estimators, options, &mut notes, &prefix)?
                };
                for (e, v) in per {
                    let entry = sums.entry(e).or_insert((0.0, 0));
                    if let Some(v) = v {
                        entry.0 += v;
                        entry.1 += 1;
                    }
                }
            }
            estimators
                .iter()
                .map(|e| {
                    let v = sums.get(e).and_then(|(s, k)| (*k > 0).then(|| s / *k as f64));
                    (*e, v)
                })
                .collect()
        }
    };
    let scores = values.into_iter().map(|(e, v)| (e.name().to_string(), v)).collect();
    Ok(ScoreReport { n: features.n(), d: features.d(), num_classes: targets.num_classes(), scores, notes })
}

/// One single-label task: classes `y` (and, for ordinal / continuous targets, the values `cont`).
fn score_task(
    features: &Features,
    y: &[usize],
    cont: Option<&[f64]>,
    estimators: &[Estimator],
    options: &ScoreOptions,
    notes: &mut Vec<String>,
    prefix: &str,
) -> Result<BTreeMap<Estimator, Option<f64>>, TransferError> {
    let stats = ClassStats::new(features, y)?;
    let present = stats.present().count();
    let needs_cov = estimators.iter().any(|e| {
        let knn = matches!(e, Estimator::KnnAgreement);
        let gbc_without_pca = matches!(e, Estimator::Gbc) && options.gbc.pca.is_none();
        !(knn || gbc_without_pca)
    });
    let want_rates = estimators.contains(&Estimator::Transrate);
    let cov = if needs_cov {
        Some(Covariance::new(features, &stats, want_rates.then_some(options.transrate_eps))?)
    } else {
        None
    };
    let mut out = BTreeMap::new();
    for &e in estimators {
        let name = e.name();
        let mut undefined = |why: String| {
            notes.push(format!("{prefix}{name}: {why}"));
            None
        };
        let value = if e.is_class_based() && present < 2 && !(e == Estimator::KnnAgreement && cont.is_some())
        {
            undefined(format!("{present} class(es) present (needs ≥ 2)"))
        } else {
            match e {
                Estimator::Logme => {
                    let basis = LogmeBasis::new(features, cov.as_ref().map(|c| (&stats, c)))?;
                    Some(match cont {
                        Some(v) => basis.regression(features, &[v.to_vec()]),
                        None => basis.classification(features, &stats, y),
                    })
                }
                Estimator::Hscore => Some(hscore(&stats, cov.as_ref().expect("built"), options.hscore_rcond)),
                Estimator::HscoreShrinkage => Some(hscore_shrinkage(
                    features,
                    &stats,
                    cov.as_ref().expect("built"),
                    options.hscore_rcond,
                )),
                Estimator::Gbc => match stats.present().find(|&c| stats.counts[c] < 2) {
                    Some(c) => undefined(format!("class {c} has {} sample (needs ≥ 2)", stats.counts[c])),
                    None => Some(gbc(features, &stats, cov.as_ref(), options.gbc)),
                },
                Estimator::Nleep => {
                    match nleep(features, &stats, cov.as_ref().expect("built"), y, options.nleep)? {
                        Some(v) => Some(v),
                        None => undefined(format!(
                            "{} mixture components for {} samples",
                            options.nleep.components_per_class * stats.num_classes,
                            stats.n
                        )),
                    }
                }
                Estimator::Transrate => {
                    match transrate(&stats, cov.as_ref().expect("built"), options.transrate_eps) {
                        Some(v) => Some(v),
                        None => {
                            let c = (0..stats.num_classes).find(|&c| stats.counts[c] == 0).unwrap_or(0);
                            undefined(format!("class {c} has no sample"))
                        }
                    }
                }
                Estimator::EffectiveDimensionality => match participation_ratio(cov.as_ref().expect("built"))
                {
                    Some(v) => Some(v),
                    None => undefined("every feature is constant".into()),
                },
                Estimator::KnnAgreement => {
                    let nb = cosine_neighbours(features, options.knn_k);
                    let v = match cont {
                        Some(c) => outcome_agreement(&nb, c),
                        None => label_agreement(&nb, y),
                    };
                    match v {
                        Some(v) => Some(v),
                        None => undefined("needs ≥ 2 rows (and a non-constant outcome for Spearman)".into()),
                    }
                }
            }
        };
        if let Some(v) = value
            && !v.is_finite()
        {
            return Err(TransferError::Numerical {
                what: "estimator",
                why: format!("{prefix}{name} is {v}"),
            });
        }
        out.insert(e, value);
    }
    Ok(out)
}
