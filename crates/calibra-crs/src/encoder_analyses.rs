//! Encoder analyses E1–E6 (spec §5.7; CRS-Bench §3.7) from metric rows (seed means of run records).
//!
//! Every analysis reads the metric rows of the evaluation's regime (default `frozen`); "clean full-label"
//! means condition `clean` and label fraction 1; "raw" means calibrator `none`; the **primary probe** of
//! a cell is its probe without a depth suffix (see E3) — a cell with several primary probes is reported
//! as ambiguous and left out. An analysis whose records are missing says so in `status` (`"not enough
//! records: …"`) and reports no rows; nothing is imputed.
//!
//! - **E1 specialist matched-domain gain**: for each declared specialist (encoder → matched datasets):
//!   `AUROC_in` = mean clean full-label raw AUROC over its matched datasets, `AUROC_out` = the same over
//!   its other datasets, `Δspec = AUROC_in − AUROC_out`; `CRS_in`, `CRS_out`, `Δood = CRS_in − CRS_out`
//!   from the per-domain CRS; `margin_in` = `AUROC_in` − the mean AUROC of the other encoders on the
//!   matched datasets.
//! - **E2 calibration repair**: for every calibrated metric row set (calibrator ≠ `none`, clean), the raw
//!   row set of the same encoder, dataset, probe and label fraction: ECE and Brier before/after,
//!   relative ECE reduction `(before − after)/before`, and `ΔAUROC = after − before`.
//! - **E3 feature depth**: probes named `NAME@DEPTH` (DEPTH in (0, 1], the fraction of encoder blocks
//!   whose features the probe reads: `linear@0.5` = the middle block); the plain `NAME` probe counts as
//!   depth 1. Per (encoder, dataset, NAME) with at least 2 depths: AUROC and ECE per depth, the best depth
//!   by AUROC and its gain over depth 1 (when depth 1 is observed).
//! - **E4 corruption-induced miscalibration**: per cell, for every perturbation × severity with both
//!   metrics: AUROC drop `A₀ − A_j` and ECE increase `ECE_j − ECE₀`; per cell their means; across cells
//!   the Pearson r and Spearman ρ of (mean AUROC drop, mean ECE increase) (at least 3 cells).
//! - **E5 prompting vs probing**: per (encoder, dataset, prompt) with zero-shot runs: clean zero-shot
//!   AUROC (and accuracy, `parse_coverage` when recorded) next to the encoder's frozen primary-probe
//!   AUROC on the same dataset, and their difference.
//! - **E6 label-fraction crossover**: against a declared reference encoder: per cell the AUROC at
//!   fractions 0.01 and 0.10, and the first fraction (ascending) at which the encoder's clean raw AUROC
//!   reaches the reference's AUROC at that same fraction (`None`: never, over the shared fractions).

use std::collections::{BTreeMap, BTreeSet};

use calibra_metrics::spearman_rho;
use serde::Serialize;

use crate::evaluation::{DomainCrs, MetricRowRecord};
use crate::run_record::{Condition, Regime};

/// Declarations the analyses need beyond the run records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncoderAnalysisOptions {
    /// E1: specialist encoder → its matched datasets.
    pub specialists: BTreeMap<String, Vec<String>>,
    /// E6: the reference encoder of the crossover.
    pub crossover_reference: Option<String>,
}

/// One analysis: its rows, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis<T> {
    pub rows: Vec<T>,
    /// `None` when rows were computed; otherwise `"not enough records: …"`.
    pub status: Option<String>,
    /// Cells left out and why.
    pub notes: Vec<String>,
}

impl<T> Analysis<T> {
    fn new(rows: Vec<T>, missing: impl FnOnce() -> String, notes: Vec<String>) -> Self {
        let status = rows.is_empty().then(|| format!("not enough records: {}", missing()));
        Analysis { rows, status, notes }
    }
}

/// E1 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecialistGain {
    pub encoder: String,
    pub matched: Vec<String>,
    pub auroc_in: Option<f64>,
    pub auroc_out: Option<f64>,
    pub delta_spec: Option<f64>,
    pub crs_in: Option<f64>,
    pub crs_out: Option<f64>,
    pub delta_ood: Option<f64>,
    pub margin_in: Option<f64>,
}

/// E2 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationRepair {
    pub encoder: String,
    pub dataset: String,
    pub probe: String,
    pub label_fraction: f64,
    pub calibrator: String,
    pub ece_before: Option<f64>,
    pub ece_after: Option<f64>,
    pub ece_reduction: Option<f64>,
    pub brier_before: Option<f64>,
    pub brier_after: Option<f64>,
    pub auroc_before: Option<f64>,
    pub auroc_after: Option<f64>,
    pub delta_auroc: Option<f64>,
}

/// E3 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeatureDepth {
    pub encoder: String,
    pub dataset: String,
    pub probe: String,
    /// `(depth, AUROC, ECE)` by ascending depth.
    pub depths: Vec<(f64, Option<f64>, Option<f64>)>,
    pub best_depth: Option<f64>,
    /// Best AUROC − AUROC at depth 1.
    pub gain_over_final: Option<f64>,
}

/// E4 row (one cell).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorruptionMiscalibration {
    pub encoder: String,
    pub dataset: String,
    pub conditions: usize,
    pub mean_auroc_drop: f64,
    pub mean_ece_increase: f64,
    pub max_ece_increase: f64,
}

/// E4 across cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorruptionCorrelation {
    pub cells: usize,
    /// NaN (JSON null) with fewer than 3 cells or a constant series.
    pub pearson_r: f64,
    pub spearman_rho: f64,
}

/// E5 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptingVsProbing {
    pub encoder: String,
    pub dataset: String,
    pub prompt: String,
    pub zero_shot_auroc: Option<f64>,
    pub zero_shot_accuracy: Option<f64>,
    pub parse_coverage: Option<f64>,
    pub probe_auroc: Option<f64>,
    /// Zero-shot − probe AUROC.
    pub delta_auroc: Option<f64>,
}

/// E6 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelCrossover {
    pub encoder: String,
    pub dataset: String,
    pub reference: String,
    pub auroc_at_1pct: Option<f64>,
    pub auroc_at_10pct: Option<f64>,
    /// First fraction where AUROC ≥ the reference's AUROC at that fraction.
    pub crossover_fraction: Option<f64>,
    /// Fractions observed for both.
    pub shared_fractions: Vec<f64>,
}

/// E1–E6.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderAnalyses {
    pub regime: Regime,
    pub specialist: Analysis<SpecialistGain>,
    pub calibration_repair: Analysis<CalibrationRepair>,
    pub feature_depth: Analysis<FeatureDepth>,
    pub corruption_miscalibration: Analysis<CorruptionMiscalibration>,
    pub corruption_correlation: Option<CorruptionCorrelation>,
    pub prompting: Analysis<PromptingVsProbing>,
    pub label_crossover: Analysis<LabelCrossover>,
    /// Cells left out of every analysis (e.g. several primary probes).
    pub notes: Vec<String>,
}

/// Splits `NAME@DEPTH` into `(NAME, DEPTH)`; a plain name is depth 1. `None` for a malformed depth.
pub fn probe_depth(probe: &str) -> Option<(&str, f64)> {
    match probe.rsplit_once('@') {
        None => Some((probe, 1.0)),
        Some((name, d)) => {
            let d: f64 = d.parse().ok()?;
            (d > 0.0 && d <= 1.0 && !name.is_empty()).then_some((name, d))
        }
    }
}

/// Pearson correlation; NaN with fewer than 3 pairs or a constant series.
pub fn pearson_r(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    if n < 3 || n != y.len() {
        return f64::NAN;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 { f64::NAN } else { sxy / (sxx * syy).sqrt() }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

type Key<'a> = (&'a str, &'a str, Regime, &'a str, &'a str, u64, &'a Condition, &'a str);

/// Metric-row means by key.
struct Index<'a> {
    rows: BTreeMap<Key<'a>, f64>,
}

impl<'a> Index<'a> {
    fn new(rows: &'a [MetricRowRecord]) -> Self {
        let rows = rows
            .iter()
            .map(|r| {
                (
                    (
                        r.encoder.as_str(),
                        r.dataset.as_str(),
                        r.regime,
                        r.probe.as_str(),
                        r.calibrator.as_str(),
                        r.label_fraction.to_bits(),
                        &r.condition,
                        r.metric.as_str(),
                    ),
                    r.mean,
                )
            })
            .collect();
        Index { rows }
    }

    #[allow(clippy::too_many_arguments)]
    fn get(
        &self,
        e: &str,
        d: &str,
        regime: Regime,
        probe: &str,
        cal: &str,
        frac: f64,
        cond: &Condition,
        metric: &str,
    ) -> Option<f64> {
        self.rows.get(&(e, d, regime, probe, cal, frac.to_bits(), cond, metric)).copied()
    }
}

/// Runs E1–E6 (see the module documentation). `disc` and `cal` are the discrimination and calibration
/// metric names of the evaluation (default `macro_auroc`, `ece`).
pub fn encoder_analyses(
    rows: &[MetricRowRecord],
    per_domain: &[DomainCrs],
    regime: Regime,
    disc: &str,
    cal: &str,
    options: &EncoderAnalysisOptions,
) -> EncoderAnalyses {
    let index = Index::new(rows);
    let clean = Condition::Clean;
    // Primary probe per (encoder, dataset) in the regime: probes without a depth suffix.
    let mut probes: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.regime == regime && !r.probe.contains('@')) {
        probes.entry((r.encoder.as_str(), r.dataset.as_str())).or_default().insert(r.probe.as_str());
    }
    let mut ambiguous = Vec::new();
    let primary: BTreeMap<(&str, &str), &str> = probes
        .iter()
        .filter_map(|(&(e, d), set)| {
            if set.len() == 1 {
                Some(((e, d), *set.iter().next()?))
            } else {
                ambiguous.push(format!(
                    "{e}/{d}: several probes ({}) without a depth suffix; cell left out",
                    set.iter().copied().collect::<Vec<_>>().join(", ")
                ));
                None
            }
        })
        .collect();
    let clean_full = |e: &str, d: &str, metric: &str| -> Option<f64> {
        let probe = primary.get(&(e, d))?;
        index.get(e, d, regime, probe, "none", 1.0, &clean, metric)
    };

    // E1.
    let mut e1 = Vec::new();
    for (enc, matched) in &options.specialists {
        let datasets: Vec<&str> = primary.keys().filter(|(e, _)| e == enc).map(|&(_, d)| d).collect();
        let split = |f: &dyn Fn(&str) -> Option<f64>| -> (Option<f64>, Option<f64>) {
            let (mut inn, mut out) = (Vec::new(), Vec::new());
            for &d in &datasets {
                if let Some(v) = f(d) {
                    if matched.iter().any(|m| m == d) { inn.push(v) } else { out.push(v) }
                }
            }
            (mean(&inn), mean(&out))
        };
        let (auroc_in, auroc_out) = split(&|d| clean_full(enc, d, disc));
        let crs_of = |d: &str| {
            per_domain.iter().find(|c| c.dataset == d)?.scores.iter().find(|s| s.0 == *enc).map(|s| s.1)
        };
        let (crs_in, crs_out) = split(&crs_of);
        let others: Vec<f64> = primary
            .keys()
            .filter(|(e, d)| e != enc && matched.iter().any(|m| m == d))
            .filter_map(|&(e, d)| clean_full(e, d, disc))
            .collect();
        if datasets.is_empty() {
            continue;
        }
        e1.push(SpecialistGain {
            encoder: enc.clone(),
            matched: matched.clone(),
            auroc_in,
            auroc_out,
            delta_spec: auroc_in.zip(auroc_out).map(|(a, b)| a - b),
            crs_in,
            crs_out,
            delta_ood: crs_in.zip(crs_out).map(|(a, b)| a - b),
            margin_in: auroc_in.zip(mean(&others)).map(|(a, b)| a - b),
        });
    }
    let specialist = Analysis::new(
        e1,
        || {
            if options.specialists.is_empty() {
                "no specialist encoder declared (encoder → matched datasets)".into()
            } else {
                format!("no {regime} run of a declared specialist encoder")
            }
        },
        Vec::new(),
    );

    // E2.
    let mut e2 = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.regime == regime && r.calibrator != "none" && r.condition == clean && r.metric == cal)
    {
        let get = |calibrator: &str, metric: &str| {
            index.get(&r.encoder, &r.dataset, regime, &r.probe, calibrator, r.label_fraction, &clean, metric)
        };
        let (eb, ea) = (get("none", cal), get(&r.calibrator, cal));
        let (bb, ba) = (get("none", "brier"), get(&r.calibrator, "brier"));
        let (ab, aa) = (get("none", disc), get(&r.calibrator, disc));
        if eb.is_none() {
            continue;
        }
        e2.push(CalibrationRepair {
            encoder: r.encoder.clone(),
            dataset: r.dataset.clone(),
            probe: r.probe.clone(),
            label_fraction: r.label_fraction,
            calibrator: r.calibrator.clone(),
            ece_before: eb,
            ece_after: ea,
            ece_reduction: eb.zip(ea).filter(|(b, _)| *b > 0.0).map(|(b, a)| (b - a) / b),
            brier_before: bb,
            brier_after: ba,
            auroc_before: ab,
            auroc_after: aa,
            delta_auroc: ab.zip(aa).map(|(b, a)| a - b),
        });
    }
    let calibration_repair = Analysis::new(
        e2,
        || format!("no {regime} clean run with a post-hoc calibrator and its raw (`none`) counterpart"),
        Vec::new(),
    );

    // E3.
    // (encoder, dataset, probe name) → depth bits → (depth, full probe name).
    type DepthSets<'a> = BTreeMap<(&'a str, &'a str, &'a str), BTreeMap<u64, (f64, &'a str)>>;
    let mut depth_sets: DepthSets = BTreeMap::new();
    let mut e3_notes = Vec::new();
    for r in rows.iter().filter(|r| r.regime == regime && r.calibrator == "none" && r.condition == clean) {
        if r.label_fraction != 1.0 || r.metric != disc {
            continue;
        }
        match probe_depth(&r.probe) {
            Some((name, d)) => {
                depth_sets
                    .entry((r.encoder.as_str(), r.dataset.as_str(), name))
                    .or_default()
                    .insert(d.to_bits(), (d, r.probe.as_str()));
            }
            None => e3_notes
                .push(format!("{}/{}: probe `{}` has a malformed depth", r.encoder, r.dataset, r.probe)),
        }
    }
    let mut e3 = Vec::new();
    for ((e, d, name), depths) in depth_sets {
        if depths.len() < 2 {
            continue;
        }
        let mut list: Vec<(f64, Option<f64>, Option<f64>)> = depths
            .values()
            .map(|&(depth, probe)| {
                let g = |m| index.get(e, d, regime, probe, "none", 1.0, &clean, m);
                (depth, g(disc), g(cal))
            })
            .collect();
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        let best =
            list.iter().filter_map(|&(dp, a, _)| Some((dp, a?))).fold(None, |acc: Option<(f64, f64)>, x| {
                match acc {
                    Some(b) if b.1 >= x.1 => Some(b),
                    _ => Some(x),
                }
            });
        let last = list.iter().find(|x| x.0 == 1.0).and_then(|x| x.1);
        e3.push(FeatureDepth {
            encoder: e.to_string(),
            dataset: d.to_string(),
            probe: name.to_string(),
            best_depth: best.map(|b| b.0),
            gain_over_final: best.zip(last).map(|(b, l)| b.1 - l),
            depths: list,
        });
    }
    let feature_depth = Analysis::new(
        e3,
        || "no cell with probes at 2 or more depths (probe names `NAME@DEPTH`, e.g. `linear@0.5`)".into(),
        e3_notes,
    );

    // E4.
    let mut e4 = Vec::new();
    for (&(e, d), &probe) in &primary {
        let (Some(a0), Some(c0)) = (
            index.get(e, d, regime, probe, "none", 1.0, &clean, disc),
            index.get(e, d, regime, probe, "none", 1.0, &clean, cal),
        ) else {
            continue;
        };
        let conds: BTreeSet<&Condition> = rows
            .iter()
            .filter(|r| {
                r.encoder == e
                    && r.dataset == d
                    && r.regime == regime
                    && r.probe == probe
                    && r.calibrator == "none"
                    && r.label_fraction == 1.0
                    && matches!(r.condition, Condition::Perturbation { .. })
            })
            .map(|r| &r.condition)
            .collect();
        let (mut drops, mut rises) = (Vec::new(), Vec::new());
        for c in conds {
            if let (Some(a), Some(ce)) = (
                index.get(e, d, regime, probe, "none", 1.0, c, disc),
                index.get(e, d, regime, probe, "none", 1.0, c, cal),
            ) {
                drops.push(a0 - a);
                rises.push(ce - c0);
            }
        }
        if drops.is_empty() {
            continue;
        }
        e4.push(CorruptionMiscalibration {
            encoder: e.to_string(),
            dataset: d.to_string(),
            conditions: drops.len(),
            mean_auroc_drop: mean(&drops).unwrap_or(f64::NAN),
            mean_ece_increase: mean(&rises).unwrap_or(f64::NAN),
            max_ece_increase: rises.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        });
    }
    let corruption_correlation = (!e4.is_empty()).then(|| {
        let x: Vec<f64> = e4.iter().map(|c| c.mean_auroc_drop).collect();
        let y: Vec<f64> = e4.iter().map(|c| c.mean_ece_increase).collect();
        CorruptionCorrelation {
            cells: x.len(),
            pearson_r: pearson_r(&x, &y),
            spearman_rho: if x.len() >= 3 { spearman_rho(&x, &y) } else { f64::NAN },
        }
    });
    let corruption_miscalibration = Analysis::new(
        e4,
        || format!("no {regime} cell with clean and perturbed runs carrying both `{disc}` and `{cal}`"),
        Vec::new(),
    );

    // E5.
    let mut e5 = Vec::new();
    let zs: BTreeSet<(&str, &str, &str)> = rows
        .iter()
        .filter(|r| r.regime == Regime::ZeroShot && r.condition == clean && r.calibrator == "none")
        .map(|r| (r.encoder.as_str(), r.dataset.as_str(), r.probe.as_str()))
        .collect();
    for (e, d, prompt) in zs {
        let g = |m| index.get(e, d, Regime::ZeroShot, prompt, "none", 1.0, &clean, m);
        let zero_shot_auroc = g(disc);
        let probe_auroc =
            primary.get(&(e, d)).and_then(|p| index.get(e, d, Regime::Frozen, p, "none", 1.0, &clean, disc));
        e5.push(PromptingVsProbing {
            encoder: e.to_string(),
            dataset: d.to_string(),
            prompt: prompt.to_string(),
            zero_shot_auroc,
            zero_shot_accuracy: g("accuracy"),
            parse_coverage: g("parse_coverage"),
            probe_auroc: if regime == Regime::Frozen { probe_auroc } else { None },
            delta_auroc: zero_shot_auroc
                .zip(probe_auroc)
                .filter(|_| regime == Regime::Frozen)
                .map(|(z, p)| z - p),
        });
    }
    let prompting = Analysis::new(e5, || "no zero-shot (prompted) clean run".into(), Vec::new());

    // E6.
    let mut e6 = Vec::new();
    let reference = options.crossover_reference.as_deref();
    if let Some(reference) = reference {
        let curve = |e: &str, d: &str| -> BTreeMap<u64, f64> {
            let Some(probe) = primary.get(&(e, d)) else { return BTreeMap::new() };
            rows.iter()
                .filter(|r| {
                    r.encoder == e
                        && r.dataset == d
                        && r.regime == regime
                        && r.probe == *probe
                        && r.calibrator == "none"
                        && r.condition == clean
                        && r.metric == disc
                })
                .map(|r| (r.label_fraction.to_bits(), r.mean))
                .collect()
        };
        for &(e, d) in primary.keys() {
            if e == reference {
                continue;
            }
            let reference_curve = curve(reference, d);
            if reference_curve.is_empty() {
                continue;
            }
            let own = curve(e, d);
            // f64 bits of positive numbers sort like the numbers.
            let shared: Vec<(f64, f64, f64)> = own
                .iter()
                .filter_map(|(bits, &a)| Some((f64::from_bits(*bits), a, *reference_curve.get(bits)?)))
                .collect();
            if shared.is_empty() {
                continue;
            }
            let at = |f: f64| own.get(&f.to_bits()).copied();
            e6.push(LabelCrossover {
                encoder: e.to_string(),
                dataset: d.to_string(),
                reference: reference.to_string(),
                auroc_at_1pct: at(0.01),
                auroc_at_10pct: at(0.1),
                crossover_fraction: shared.iter().find(|(_, a, r)| a >= r).map(|s| s.0),
                shared_fractions: shared.iter().map(|s| s.0).collect(),
            });
        }
    }
    let label_crossover = Analysis::new(
        e6,
        || match reference {
            None => "no crossover reference encoder declared".into(),
            Some(r) => format!("no cell shares a label fraction with the reference encoder `{r}`"),
        },
        Vec::new(),
    );

    EncoderAnalyses {
        regime,
        specialist,
        calibration_repair,
        feature_depth,
        corruption_miscalibration,
        corruption_correlation,
        prompting,
        label_crossover,
        notes: ambiguous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn row(
        e: &str,
        d: &str,
        regime: Regime,
        probe: &str,
        cal: &str,
        frac: f64,
        c: Condition,
        m: &str,
        v: f64,
    ) -> MetricRowRecord {
        MetricRowRecord {
            encoder: e.into(),
            dataset: d.into(),
            regime,
            probe: probe.into(),
            calibrator: cal.into(),
            label_fraction: frac,
            condition: c,
            metric: m.into(),
            mean: v,
            std: None,
            n_seeds: 1,
        }
    }

    fn clean(e: &str, d: &str, probe: &str, cal: &str, frac: f64, m: &str, v: f64) -> MetricRowRecord {
        row(e, d, Regime::Frozen, probe, cal, frac, Condition::Clean, m, v)
    }

    fn blur(sev: u32) -> Condition {
        Condition::Perturbation { perturbation: "blur".into(), severity: sev }
    }

    #[test]
    fn empty_input_reports_not_enough_records_everywhere() {
        let a = encoder_analyses(&[], &[], Regime::Frozen, "macro_auroc", "ece", &Default::default());
        for status in [
            &a.specialist.status,
            &a.calibration_repair.status,
            &a.feature_depth.status,
            &a.corruption_miscalibration.status,
            &a.prompting.status,
            &a.label_crossover.status,
        ] {
            assert!(status.as_ref().unwrap().starts_with("not enough records: "), "{status:?}");
        }
        assert!(a.corruption_correlation.is_none());
    }

    #[test]
    fn small_exact_cases() {
        let mut rows = Vec::new();
        // Values chosen as dyadic fractions so every difference below is exact.
        for (e, a_in, a_out) in [("spec", 0.875, 0.625), ("gen", 0.75, 0.75)] {
            rows.push(clean(e, "in", "lin", "none", 1.0, "macro_auroc", a_in));
            rows.push(clean(e, "out", "lin", "none", 1.0, "macro_auroc", a_out));
            rows.push(clean(e, "in", "lin", "none", 1.0, "ece", 0.125));
            rows.push(clean(e, "in", "lin", "temperature", 1.0, "ece", 0.03125));
            rows.push(clean(
                e,
                "in",
                "lin",
                "none",
                0.01,
                "macro_auroc",
                if e == "spec" { 0.5 } else { 0.625 },
            ));
            rows.push(clean(e, "in", "lin", "none", 0.1, "macro_auroc", 0.75));
        }
        rows.push(clean("spec", "in", "lin@0.5", "none", 1.0, "macro_auroc", 0.9375));
        rows.push(clean("spec", "in", "lin@0.5", "none", 1.0, "ece", 0.25));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(1), "macro_auroc", 0.75));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(1), "ece", 0.25));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(2), "macro_auroc", 0.625));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(2), "ece", 0.5));
        let options = EncoderAnalysisOptions {
            specialists: BTreeMap::from([("spec".to_string(), vec!["in".to_string()])]),
            crossover_reference: Some("gen".into()),
        };
        let domains = vec![
            DomainCrs {
                dataset: "in".into(),
                scores: vec![("gen".into(), 0.25, 2), ("spec".into(), 0.75, 1)],
            },
            DomainCrs {
                dataset: "out".into(),
                scores: vec![("gen".into(), 0.5, 1), ("spec".into(), 0.5, 2)],
            },
        ];
        let a = encoder_analyses(&rows, &domains, Regime::Frozen, "macro_auroc", "ece", &options);
        let e1 = &a.specialist.rows[0];
        assert_eq!((e1.delta_spec, e1.delta_ood, e1.margin_in), (Some(0.25), Some(0.25), Some(0.125)));
        let e2 = &a.calibration_repair.rows;
        assert_eq!(e2.len(), 2);
        // (0.125 − 0.03125) / 0.125 = 0.75.
        assert_eq!(e2[0].ece_reduction, Some(0.75));
        let e3 = &a.feature_depth.rows[0];
        assert_eq!((e3.probe.as_str(), e3.best_depth, e3.gain_over_final), ("lin", Some(0.5), Some(0.0625)));
        let e4 = &a.corruption_miscalibration.rows[0];
        // Drops 0.125, 0.25 → 0.1875; ECE increases 0.125, 0.375 → 0.25.
        assert_eq!((e4.conditions, e4.mean_auroc_drop, e4.mean_ece_increase), (2, 0.1875, 0.25));
        // One cell: no correlation (NaN), but the analysis reports it.
        assert!(a.corruption_correlation.as_ref().unwrap().pearson_r.is_nan());
        // Crossover vs `gen` at the same fraction: 0.01 (0.5 < 0.625) no, 0.1 (0.75 ≥ 0.75) yes.
        let e6: Vec<_> = a.label_crossover.rows.iter().filter(|r| r.dataset == "in").collect();
        assert_eq!((e6[0].crossover_fraction, e6[0].auroc_at_1pct), (Some(0.1), Some(0.5)));
        assert!(a.prompting.status.is_some());
        assert_eq!(probe_depth("lin@0.5"), Some(("lin", 0.5)));
        assert_eq!(probe_depth("lin@1.5"), None);
    }
}
