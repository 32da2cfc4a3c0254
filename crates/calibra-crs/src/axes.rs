//! The four reliability axes per cell (encoder × dataset) from metric rows, and the encoder aggregate
//! (spec §2). All values are oriented: larger is better.
//!
//! For one regime (default `frozen`), one probe and one calibrator (default `none`), with `A(ρ)` the
//! seed-mean clean discrimination metric (default `macro_auroc`) of the cell trained on label fraction ρ,
//! `A0 = A(1)`:
//!
//! - **discrimination** = `A0`;
//! - **calibration** = `−ECE` (the seed-mean calibration metric, default `ece`, clean test, ρ = 1);
//! - **label efficiency** `LE = (1/|P|) Σ_{ρ ∈ P} A(ρ) / A0`, P = {0.01, 0.05, 0.10, 0.25} by default;
//!   ratios above 1 are kept (not clipped). Missing unless `A0 > 0` and every ρ ∈ P is observed;
//! - **AULC** (reported as a contrast, never an axis) = the trapezoid rule over the label fraction on
//!   every observed clean fraction of the cell, sorted, including 1.0:
//!   `Σ_i (ρ_{i+1} − ρ_i) · (A(ρ_i) + A(ρ_{i+1})) / 2` (numpy `trapezoid(A, ρ)`). It is the raw area over
//!   [ρ_min, 1], not divided by the width. Missing with fewer than two fractions or without ρ = 1;
//! - **robustness**: for every perturbation × severity `j` observed at ρ = 1,
//!   `δ_j = max(0, (A0 − A_j) / A0)`, `δ̄ = mean_j δ_j`, `δ_max = max_j δ_j`; for shift targets `t`
//!   observed at ρ = 1, `δ_shift = mean_t max(0, (A0 − A_t) / A0)` (the protocol has one target per
//!   cell; with several, their mean). Then
//!   `rob = max(0, 1 − (δ̄ + δ_max + 1_shift · δ_shift) / (2 + 1_shift))` with `1_shift = 1` iff the cell
//!   has a shift target, and the **corruption-only** variant uses `1_shift = 0` everywhere.
//!   Missing unless `A0 > 0` and at least one perturbation is observed.
//!
//! - **selective** (optional fifth axis, only with [`AxisConfig::selective_metric`]) = `−AUGRC`: the
//!   seed-mean AUGRC metric (default name [`SELECTIVE_METRIC`], attached to the run records from their
//!   predictions files by [`crate::selective_axis::with_selective_metrics`]) of the same clean ρ = 1 group
//!   as discrimination and calibration.
//!
//! Unobserved values stay missing, never imputed. An encoder's aggregate axis value is the mean over its
//! cells where that axis is observed ([`AxisPlan::profiles`]); an encoder with no observed cell on an axis
//! has `None` there, and [`Profile::require_complete`] refuses to score it.
//!
//! The computation is split into an [`AxisPlan`] (which metric-row indices feed which cell, resolved
//! once from the group keys) and its evaluation on a `[group][metric]` means slice, so the bootstrap
//! re-evaluates the same plan on resampled means.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::CrsError;
use crate::metric_rows::{MetricRows, SeedTable};
use crate::profile::{Axis, Profile, axes_of, oriented_calibration, oriented_selective};
use crate::run_record::{Condition, GroupKey, Regime};

/// The label fractions of the label-efficiency axis.
pub const LE_FRACTIONS: [f64; 4] = [0.01, 0.05, 0.10, 0.25];

/// The metric name of the per-run AUGRC that feeds the selective axis.
pub const SELECTIVE_METRIC: &str = "augrc";

/// Which robustness formula feeds the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RobustnessVariant {
    /// `1_shift = 1` for cells with an observed shift target (the primary axis).
    #[default]
    WithShift,
    /// `1_shift = 0` everywhere.
    CorruptionOnly,
}

/// What the axes are computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AxisConfig {
    /// The regime whose runs define the axes.
    pub regime: Regime,
    /// The probe; `None` accepts any, but then every cell must have exactly one.
    pub probe: Option<String>,
    /// The calibrator; `None` accepts any, but then every cell must have exactly one.
    pub calibrator: Option<String>,
    /// Larger-is-better discrimination metric (also the metric of LE, AULC and robustness drops).
    pub discrimination_metric: String,
    /// Lower-is-better calibration metric; the axis is its negation.
    pub calibration_metric: String,
    /// The fractions P of the label-efficiency axis.
    pub le_fractions: Vec<f64>,
    /// The robustness formula used for the profile.
    pub robustness: RobustnessVariant,
    /// Lower-is-better metric of the optional fifth (selective) axis, oriented as its negation;
    /// `None` (the default, absent from the JSON) for the four-axis CRS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selective_metric: Option<String>,
}

impl AxisConfig {
    /// The number of axes: 4, or 5 with the selective axis.
    pub fn n_axes(&self) -> usize {
        if self.selective_metric.is_some() { 5 } else { 4 }
    }
}

impl Default for AxisConfig {
    fn default() -> Self {
        AxisConfig {
            regime: Regime::Frozen,
            probe: None,
            calibrator: Some("none".to_string()),
            discrimination_metric: "macro_auroc".to_string(),
            calibration_metric: "ece".to_string(),
            le_fractions: LE_FRACTIONS.to_vec(),
            robustness: RobustnessVariant::WithShift,
            selective_metric: None,
        }
    }
}

/// The numeric axis values of one cell (no names; see [`CellAxes`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct CellValues {
    pub discrimination: Option<f64>,
    /// `−ECE`.
    pub calibration: Option<f64>,
    pub label_efficiency: Option<f64>,
    pub aulc: Option<f64>,
    /// Robustness with the shift term where the cell has a shift target.
    pub robustness: Option<f64>,
    /// Robustness with `1_shift = 0`.
    pub robustness_corruption_only: Option<f64>,
    pub delta_mean: Option<f64>,
    pub delta_max: Option<f64>,
    pub delta_shift: Option<f64>,
    /// `−AUGRC` (only with the selective axis; absent from the JSON otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selective: Option<f64>,
}

impl CellValues {
    /// The oriented value of `axis`, robustness per `variant`.
    pub fn axis(&self, axis: Axis, variant: RobustnessVariant) -> Option<f64> {
        match axis {
            Axis::Discrimination => self.discrimination,
            Axis::Calibration => self.calibration,
            Axis::LabelEfficiency => self.label_efficiency,
            Axis::Robustness => match variant {
                RobustnessVariant::WithShift => self.robustness,
                RobustnessVariant::CorruptionOnly => self.robustness_corruption_only,
            },
            Axis::Selective => self.selective,
        }
    }
}

/// The axes of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellAxes {
    pub encoder: String,
    pub dataset: String,
    #[serde(flatten)]
    pub values: CellValues,
}

#[derive(Debug, Clone, PartialEq)]
struct CellPlan {
    encoder: usize,
    dataset: String,
    /// Clean group at ρ = 1.
    clean_full: Option<usize>,
    /// Clean groups of every observed fraction, ascending fraction (for AULC).
    clean_by_fraction: Vec<(f64, usize)>,
    /// Clean groups of each ρ ∈ P, `None` if any is unobserved.
    le: Option<Vec<usize>>,
    perturbations: Vec<usize>,
    shifts: Vec<usize>,
}

/// Which metric-row indices feed which cell's axes; evaluate it on a `[group][metric]` means slice.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisPlan {
    encoders: Vec<String>,
    cells: Vec<CellPlan>,
    n_metrics: usize,
    n_groups: usize,
    disc: Option<usize>,
    cal: Option<usize>,
    /// The selective metric's index (only with the selective axis, where the metric is present).
    sel: Option<usize>,
    n_axes: usize,
    variant: RobustnessVariant,
}

impl AxisPlan {
    /// Resolves the plan from sorted group keys and metric names (as in [`MetricRows`] or
    /// `SeedTable`).
    ///
    /// Errors: a cell with runs of several probes or calibrators that `config` does not disambiguate;
    /// a label fraction of P outside (0, 1).
    pub fn new(groups: &[GroupKey], metrics: &[String], config: &AxisConfig) -> Result<Self, CrsError> {
        for &rho in &config.le_fractions {
            if !(rho > 0.0 && rho < 1.0) {
                return Err(CrsError::AxisInput {
                    message: format!("label-efficiency fraction {rho} is not in (0, 1)"),
                });
            }
        }
        let find = |name: &str| metrics.iter().position(|m| m == name);
        // (encoder, dataset) → group indices of the selected regime/probe/calibrator.
        let mut by_cell: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
        for (g, key) in groups.iter().enumerate() {
            if key.regime != config.regime
                || config.probe.as_ref().is_some_and(|p| *p != key.probe)
                || config.calibrator.as_ref().is_some_and(|c| *c != key.calibrator)
            {
                continue;
            }
            by_cell.entry((&key.encoder, &key.dataset)).or_default().push(g);
        }
        let mut encoders: Vec<String> = Vec::new();
        let mut cells = Vec::with_capacity(by_cell.len());
        for ((encoder, dataset), members) in by_cell {
            let first = &groups[members[0]];
            if let Some(other) = members
                .iter()
                .map(|&g| &groups[g])
                .find(|k| k.probe != first.probe || k.calibrator != first.calibrator)
            {
                return Err(CrsError::AxisInput {
                    message: format!(
                        "cell {encoder}/{dataset} (regime {}) has runs with probe/calibrator {}/{} and {}/{}; \
                         select one in the axis configuration",
                        config.regime, first.probe, first.calibrator, other.probe, other.calibrator
                    ),
                });
            }
            if encoders.last().map(String::as_str) != Some(encoder) {
                encoders.push(encoder.to_string());
            }
            let mut plan = CellPlan {
                encoder: encoders.len() - 1,
                dataset: dataset.to_string(),
                clean_full: None,
                clean_by_fraction: Vec::new(),
                le: None,
                perturbations: Vec::new(),
                shifts: Vec::new(),
            };
            for &g in &members {
                let key = &groups[g];
                let full = key.label_fraction.matches(1.0);
                match &key.condition {
                    Condition::Clean => {
                        plan.clean_by_fraction.push((key.label_fraction.get(), g));
                        if full {
                            plan.clean_full = Some(g);
                        }
                    }
                    Condition::Perturbation { .. } if full => plan.perturbations.push(g),
                    Condition::Shift { .. } if full => plan.shifts.push(g),
                    _ => {}
                }
            }
            plan.clean_by_fraction.sort_by(|a, b| a.0.total_cmp(&b.0));
            plan.le = config
                .le_fractions
                .iter()
                .map(|&rho| {
                    plan.clean_by_fraction.iter().find(|(f, _)| (f - rho).abs() <= 1e-9).map(|&(_, g)| g)
                })
                .collect();
            cells.push(plan);
        }
        Ok(AxisPlan {
            encoders,
            cells,
            n_metrics: metrics.len(),
            n_groups: groups.len(),
            disc: find(&config.discrimination_metric),
            cal: find(&config.calibration_metric),
            sel: config.selective_metric.as_deref().and_then(find),
            n_axes: config.n_axes(),
            variant: config.robustness,
        })
    }

    /// The plan for metric rows.
    pub fn for_rows(rows: &MetricRows, config: &AxisConfig) -> Result<Self, CrsError> {
        Self::new(rows.groups(), rows.metrics(), config)
    }

    /// Encoders with at least one planned cell, sorted by name.
    pub fn encoders(&self) -> &[String] {
        &self.encoders
    }

    /// Number of planned cells (observed encoder × dataset pairs).
    pub fn n_cells(&self) -> usize {
        self.cells.len()
    }

    /// The number of axes of the profiles (4, or 5 with the selective axis).
    pub fn n_axes(&self) -> usize {
        self.n_axes
    }

    /// The robustness variant the profiles use.
    pub fn variant(&self) -> RobustnessVariant {
        self.variant
    }

    /// Axis values of every cell (in (encoder, dataset) order) from `means` laid out
    /// `[group][metric]`; `NaN` means unobserved.
    ///
    /// # Panics
    /// If `means` does not have `groups × metrics` entries.
    pub fn evaluate_values(&self, means: &[f64]) -> Vec<CellValues> {
        assert_eq!(means.len(), self.n_groups * self.n_metrics, "means must be [group][metric]");
        let at = |g: usize, m: Option<usize>| -> Option<f64> {
            let v = means[g * self.n_metrics + m?];
            (!v.is_nan()).then_some(v)
        };
        self.cells
            .iter()
            .map(|cell| {
                let mut out = CellValues::default();
                let a0 = cell.clean_full.and_then(|g| at(g, self.disc));
                out.discrimination = a0;
                out.calibration = cell.clean_full.and_then(|g| at(g, self.cal)).map(oriented_calibration);
                out.selective = cell.clean_full.and_then(|g| at(g, self.sel)).map(oriented_selective);
                // The observed points of the clean curve, ascending fraction (no allocation: the
                // iterator is replayed for the windows).
                let curve =
                    || cell.clean_by_fraction.iter().filter_map(|&(f, g)| Some((f, at(g, self.disc)?)));
                if curve().nth(1).is_some()
                    && curve().next_back().is_some_and(|(f, _)| (f - 1.0).abs() <= 1e-9)
                {
                    out.aulc = Some(
                        curve().zip(curve().skip(1)).map(|(p, q)| (q.0 - p.0) * (p.1 + q.1) / 2.0).sum(),
                    );
                }
                let Some(a0) = a0.filter(|&a| a > 0.0) else {
                    return out;
                };
                if let Some(le) = &cell.le
                    && !le.is_empty()
                    && le.iter().all(|&g| at(g, self.disc).is_some())
                {
                    let ratios = le.iter().filter_map(|&g| at(g, self.disc)).map(|a| a / a0);
                    out.label_efficiency = Some(ratios.sum::<f64>() / le.len() as f64);
                }
                let drop = |a: f64| ((a0 - a) / a0).max(0.0);
                let deltas = || cell.perturbations.iter().filter_map(|&g| at(g, self.disc)).map(drop);
                let shifts = || cell.shifts.iter().filter_map(|&g| at(g, self.disc)).map(drop);
                let n_shifts = shifts().count();
                if n_shifts > 0 {
                    out.delta_shift = Some(shifts().sum::<f64>() / n_shifts as f64);
                }
                let n_deltas = deltas().count();
                if n_deltas > 0 {
                    let mean = deltas().sum::<f64>() / n_deltas as f64;
                    let max = deltas().fold(0.0, f64::max);
                    out.delta_mean = Some(mean);
                    out.delta_max = Some(max);
                    out.robustness_corruption_only = Some((1.0 - (mean + max) / 2.0).max(0.0));
                    out.robustness = Some(match out.delta_shift {
                        Some(shift) => (1.0 - (mean + max + shift) / 3.0).max(0.0),
                        None => (1.0 - (mean + max) / 2.0).max(0.0),
                    });
                }
                out
            })
            .collect()
    }

    /// Named axes of every cell.
    pub fn evaluate(&self, means: &[f64]) -> Vec<CellAxes> {
        self.evaluate_values(means)
            .into_iter()
            .zip(&self.cells)
            .map(|(values, cell)| CellAxes {
                encoder: self.encoders[cell.encoder].clone(),
                dataset: cell.dataset.clone(),
                values,
            })
            .collect()
    }

    /// The metric indices the plan reads (discrimination, calibration and the selective metric, where
    /// present), distinct.
    pub fn metric_indices(&self) -> Vec<usize> {
        let mut m: Vec<usize> = Vec::new();
        for i in self.disc.into_iter().chain(self.cal).chain(self.sel) {
            if !m.contains(&i) {
                m.push(i);
            }
        }
        m
    }

    /// The `[group][metric]` slots (`g · metrics + m`, ascending, distinct) that
    /// [`AxisPlan::evaluate_values`] reads: the discrimination metric of every planned group and the
    /// calibration metric of every cell's clean ρ = 1 group. The other slots of `means` are never read.
    pub fn metric_slots(&self) -> Vec<usize> {
        let mut slots = Vec::new();
        for cell in &self.cells {
            let disc_groups = cell
                .clean_full
                .iter()
                .chain(cell.clean_by_fraction.iter().map(|(_, g)| g))
                .chain(cell.le.iter().flatten())
                .chain(&cell.perturbations)
                .chain(&cell.shifts);
            if let Some(m) = self.disc {
                slots.extend(disc_groups.map(|&g| g * self.n_metrics + m));
            }
            if let (Some(m), Some(g)) = (self.cal, cell.clean_full) {
                slots.push(g * self.n_metrics + m);
            }
            if let (Some(m), Some(g)) = (self.sel, cell.clean_full) {
                slots.push(g * self.n_metrics + m);
            }
        }
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Per encoder (in [`AxisPlan::encoders`] order), the mean of `value` over the encoder's cells
    /// where it is observed; `None` if it is observed in none. `cells` is [`AxisPlan::evaluate_values`]'s
    /// output. E.g. `encoder_means(&cells, |c| c.aulc)` for the AULC contrast.
    pub fn encoder_means(
        &self,
        cells: &[CellValues],
        value: impl Fn(&CellValues) -> Option<f64>,
    ) -> Vec<Option<f64>> {
        let mut sums = vec![(0.0, 0usize); self.encoders.len()];
        for (plan, values) in self.cells.iter().zip(cells) {
            if let Some(v) = value(values) {
                sums[plan.encoder].0 += v;
                sums[plan.encoder].1 += 1;
            }
        }
        sums.into_iter().map(|(sum, n)| (n > 0).then(|| sum / n as f64)).collect()
    }

    /// Encoder aggregates, in [`AxisPlan::encoders`] order: per axis, the mean over the encoder's cells
    /// where the axis is observed (`None` if none); robustness per the plan's variant.
    pub fn aggregate_values(&self, cells: &[CellValues]) -> Vec<Vec<Option<f64>>> {
        let per_axis: Vec<Vec<Option<f64>>> = axes_of(self.n_axes)
            .iter()
            .map(|&axis| self.encoder_means(cells, |c| c.axis(axis, self.variant)))
            .collect();
        (0..self.encoders.len()).map(|e| per_axis.iter().map(|a| a[e]).collect()).collect()
    }

    /// Encoder profiles from metric means (evaluate + aggregate), in [`AxisPlan::encoders`] order.
    pub fn profiles(&self, means: &[f64]) -> Vec<Profile> {
        self.aggregate_values(&self.evaluate_values(means))
            .into_iter()
            .zip(&self.encoders)
            .map(|(values, encoder)| Profile { encoder: encoder.clone(), values })
            .collect()
    }
}

/// The plan of `axes` over the given table, with its cells and per-encoder profiles.
pub(crate) fn plan_profiles(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
) -> Result<(AxisPlan, Vec<CellAxes>, Vec<Profile>), CrsError> {
    let plan = AxisPlan::new(table.groups(), table.metrics(), axes)?;
    let cells = plan.evaluate(means);
    let profiles = plan.profiles(means);
    Ok((plan, cells, profiles))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric_rows::SeedTable;
    use crate::run_record::{RunRecord, RunRecordSet};
    use std::collections::BTreeMap;

    fn rec(enc: &str, ds: &str, frac: f64, cond: Condition, auroc: f64, ece: f64) -> RunRecord {
        RunRecord {
            encoder: enc.into(),
            dataset: ds.into(),
            regime: Regime::Frozen,
            probe: "linear".into(),
            calibrator: "none".into(),
            label_fraction: frac,
            seed: 0,
            condition: cond,
            metrics: BTreeMap::from([("macro_auroc".to_string(), auroc), ("ece".to_string(), ece)]),
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        }
    }

    fn pert(name: &str, severity: u32) -> Condition {
        Condition::Perturbation { perturbation: name.into(), severity }
    }

    fn plan_and_rows(records: Vec<RunRecord>) -> (AxisPlan, MetricRows) {
        let set = RunRecordSet::from_records(records, "mem").unwrap();
        let rows = SeedTable::from_records(&set).rows();
        (AxisPlan::for_rows(&rows, &AxisConfig::default()).unwrap(), rows)
    }

    // Dyadic values: every quantity below is exact in binary floating point by construction.
    #[test]
    fn axes_of_one_cell_follow_the_formulas() {
        let mut records = vec![
            rec("E", "D", 1.0, Condition::Clean, 0.5, 0.125),
            rec("E", "D", 1.0, pert("blur", 1), 0.375, 0.25),
            rec("E", "D", 1.0, pert("blur", 2), 0.625, 0.25),
            rec("E", "D", 1.0, Condition::Shift { target: "T".into() }, 0.25, 0.25),
        ];
        for (rho, a) in [(0.01, 0.25), (0.05, 0.375), (0.1, 0.5), (0.25, 0.625)] {
            records.push(rec("E", "D", rho, Condition::Clean, a, 0.0));
        }
        let (plan, rows) = plan_and_rows(records);
        let cells = plan.evaluate(rows.means());
        assert_eq!(cells.len(), 1);
        let v = cells[0].values;
        assert_eq!(v.discrimination, Some(0.5));
        assert_eq!(v.calibration, Some(-0.125));
        // LE = mean(0.5, 0.75, 1.0, 1.25) = 0.875 (ratio above 1 kept).
        assert_eq!(v.label_efficiency, Some(0.875));
        // δ = {0.25, 0 (gain clipped)}, δ̄ = 0.125, δmax = 0.25, δshift = 0.5.
        assert_eq!(v.delta_mean, Some(0.125));
        assert_eq!(v.delta_max, Some(0.25));
        assert_eq!(v.delta_shift, Some(0.5));
        assert_eq!(v.robustness, Some(1.0 - 0.875 / 3.0));
        assert_eq!(v.robustness_corruption_only, Some(1.0 - 0.375 / 2.0));
        let profiles = plan.profiles(rows.means());
        assert_eq!(profiles[0].values, [Some(0.5), Some(-0.125), Some(0.875), Some(1.0 - 0.875 / 3.0)]);
    }

    #[test]
    fn unobserved_cells_and_axes_stay_missing() {
        let (plan, rows) = plan_and_rows(vec![
            rec("A", "D1", 1.0, Condition::Clean, 0.5, 0.25),
            rec("A", "D2", 1.0, Condition::Clean, 0.75, 0.125),
            rec("A", "D2", 1.0, pert("noise", 1), 0.375, 0.125),
            rec("B", "D1", 1.0, Condition::Clean, 0.25, 0.5),
        ]);
        let profiles = plan.profiles(rows.means());
        assert_eq!(plan.encoders(), ["A", "B"]);
        // A: disc mean over two cells; robustness only observed on D2 (δ = 0.5 → rob = 0.5).
        assert_eq!(profiles[0].values, [Some(0.625), Some(-0.1875), None, Some(0.5)]);
        assert_eq!(profiles[1].values, [Some(0.25), Some(-0.5), None, None]);
        let err = profiles[1].require_complete().unwrap_err().to_string();
        assert!(err.contains("`B`") && err.contains("label_efficiency"), "{err}");
    }

    /// A one-encoder, one-dataset design from generated numbers: clean AUROC per fraction (the last is
    /// ρ = 1), perturbed AUROCs, an optional shift AUROC, each scaled by `scale`.
    fn generated(clean: &[f64], perturbed: &[f64], shift: Option<f64>, scale: f64) -> Vec<RunRecord> {
        let fractions = [0.01, 0.05, 0.1, 0.25, 1.0];
        let mut out: Vec<RunRecord> = fractions
            .iter()
            .zip(clean)
            .map(|(&f, &a)| rec("E", "D", f, Condition::Clean, a * scale, 0.1))
            .collect();
        for (i, &a) in perturbed.iter().enumerate() {
            out.push(rec("E", "D", 1.0, pert("p", i as u32 + 1), a * scale, 0.1));
        }
        if let Some(a) = shift {
            out.push(rec("E", "D", 1.0, Condition::Shift { target: "T".into() }, a * scale, 0.1));
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn relative_axes_are_scale_free_and_bounded(
            clean in proptest::collection::vec(0.5f64..1.0, 5),
            perturbed in proptest::collection::vec(0.3f64..1.0, 1..8),
            shift in proptest::option::of(0.3f64..1.0),
            scale in 0.5f64..1.5,
        ) {
            let (plan, rows) = plan_and_rows(generated(&clean, &perturbed, shift, 1.0));
            let base = plan.evaluate_values(rows.means())[0];
            let (plan_s, rows_s) = plan_and_rows(generated(&clean, &perturbed, shift, scale));
            let scaled = plan_s.evaluate_values(rows_s.means())[0];
            let near = |a: Option<f64>, b: Option<f64>| (a.unwrap() - b.unwrap()).abs() < 1e-12;
            // LE and every δ are ratios to A0: invariant under a common scale; AULC scales linearly.
            proptest::prop_assert!(near(base.label_efficiency, scaled.label_efficiency));
            proptest::prop_assert!(near(base.robustness, scaled.robustness));
            proptest::prop_assert!(near(base.robustness_corruption_only, scaled.robustness_corruption_only));
            proptest::prop_assert!(near(base.aulc.map(|a| a * scale), scaled.aulc));
            let (rob, corr) = (base.robustness.unwrap(), base.robustness_corruption_only.unwrap());
            proptest::prop_assert!((0.0..=1.0).contains(&rob) && (0.0..=1.0).contains(&corr));
            proptest::prop_assert!(base.delta_mean.unwrap() <= base.delta_max.unwrap());
            match base.delta_shift {
                // No shift target: both variants are the same formula.
                None => proptest::prop_assert_eq!(rob, corr),
                // A shift drop of zero can only soften the penalty ((a + b)/3 ≤ (a + b)/2).
                Some(0.0) => proptest::prop_assert!(rob >= corr),
                Some(_) => {}
            }
        }

        #[test]
        fn record_order_does_not_change_the_rows(seed in proptest::prelude::any::<u64>()) {
            use rand::{SeedableRng, seq::SliceRandom};
            let mut records = generated(&[0.6, 0.7, 0.8, 0.85, 0.9], &[0.8, 0.7], Some(0.75), 1.0);
            for r in records.clone() {
                records.push(RunRecord { seed: 1, metrics: r.metrics.iter().map(|(k, v)| (k.clone(), v * 0.99)).collect(), ..r });
            }
            let (_, rows) = plan_and_rows(records.clone());
            records.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
            let (_, shuffled) = plan_and_rows(records);
            proptest::prop_assert_eq!(rows, shuffled);
        }
    }

    #[test]
    fn the_planned_slots_are_all_the_evaluation_reads() {
        // Two seeds (the second with a missing shift run) so the means are not just the values.
        let mut records = generated(&[0.6, 0.7, 0.8, 0.85, 0.9], &[0.8, 0.7, 0.95], Some(0.75), 1.0);
        for r in generated(&[0.61, 0.72, 0.83, 0.84, 0.92], &[0.81, 0.69, 0.9], None, 1.0) {
            records.push(RunRecord { seed: 1, ..r });
        }
        records.push(rec("F", "D", 1.0, Condition::Clean, 0.7, 0.2));
        let table = SeedTable::from_records(&RunRecordSet::from_records(records, "mem").unwrap());
        let plan = AxisPlan::new(table.groups(), table.metrics(), &AxisConfig::default()).unwrap();
        let (mut full, mut restricted) = (Vec::new(), Vec::new());
        for weights in [[1, 1], [2, 0], [0, 2]] {
            table.weighted_means_into(&weights, &mut full);
            table.weighted_means_at_into(&weights, &plan.metric_slots(), &mut restricted);
            let (a, b) = (plan.evaluate_values(&full), plan.evaluate_values(&restricted));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "weights {weights:?}");
        }
    }

    #[test]
    fn ambiguous_probe_is_an_error() {
        let mut other = rec("E", "D", 1.0, Condition::Clean, 0.5, 0.1);
        other.probe = "mlp".into();
        let set =
            RunRecordSet::from_records(vec![rec("E", "D", 1.0, Condition::Clean, 0.5, 0.1), other], "m")
                .unwrap();
        let rows = SeedTable::from_records(&set).rows();
        let err = AxisPlan::for_rows(&rows, &AxisConfig::default()).unwrap_err().to_string();
        assert!(err.contains("E/D") && err.contains("mlp"), "{err}");
        let config = AxisConfig { probe: Some("mlp".into()), ..AxisConfig::default() };
        assert_eq!(AxisPlan::for_rows(&rows, &config).unwrap().n_cells(), 1);
    }
}
