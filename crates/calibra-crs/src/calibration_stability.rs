//! Calibration stability (spec §6, MVC-Bench): how much accuracy, ECE, MCE and ACE move across training
//! seeds and across prompt templates, per (encoder, dataset, regime, method, calibrator, label fraction,
//! condition).
//!
//! # Metrics
//! The run-record metric names written by `calibra run` and `calibra zero-shot`
//! (`calibra_run::slot_outputs::record_metrics`): `accuracy`, `ece` (15 equal-width bins, top label),
//! `mce`, and `adaptive_ece` (ACE: equal-mass bins), in that order ([`STABILITY_METRICS`]). A record
//! without one of them simply does not count for that metric; a group holding none of them gives no row.
//!
//! # Template convention
//! A probe that carries a prompt template is written `<method>:<template id>`, where the template id
//! (after the **last** `:`) is one ASCII uppercase letter followed by one or more digits: `P1`…`P7` for
//! the MVC-Bench template family and `C1`, `C2`… for user templates (`calibra zero-shot` writes
//! `zero-shot:P1`). Any regime may use it (a future `coop:P3` is recognised the same way). Any other
//! probe (`linear-ce`, `knn@0.5`, `my:label`) carries no template and is its own method.
//!
//! # Two axes
//! - **seeds** ([`StabilityAxis::Seeds`]): the records of one run key without its seed (the probe kept
//!   whole, so a templated probe is one method-and-template), one value per seed;
//! - **templates** ([`StabilityAxis::Templates`]): the records whose probe carries a template, grouped by
//!   everything except the template id (the seed included), one value per template.
//!
//! # Aggregates
//! For the `n` observed values `v_1 … v_n` of a metric in a group (members sorted: seeds ascending,
//! templates by letter then number):
//! - `mean = (1/n) Σ v_i` (summed in member order: bit-identical to the metric rows' seed mean);
//! - `std` = the **sample** standard deviation (`ddof = 1`, numpy `np.std(v, ddof=1)`), the same
//!   estimator as the evaluator's seed std in [`crate::metric_rows`], computed on the values shifted by
//!   the first member, `d_i = v_i − v_1`: `sqrt(Σ (d_i − d̄)² / (n − 1))`. The shift is exact algebra
//!   (the std is shift-invariant) and makes a constant metric give exactly `0` and not a rounding residue;
//!   it agrees with the unshifted two-pass form within a few ulps.
//! - `std` is **absent** (never NaN) when `n < 2`.
//!
//! Rows are ordered by axis (seeds, then templates), then encoder, dataset, regime, method, calibrator,
//! label fraction, condition, then the template (seeds axis) or the seed (templates axis): the same
//! records in any order give the same table.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::run_record::{Condition, LabelFraction, Regime, RunRecordSet};

/// The metrics reported side by side, in display order: accuracy, ECE, MCE, ACE (record names).
pub const STABILITY_METRICS: [&str; 4] = ["accuracy", "ece", "mce", "adaptive_ece"];

/// What varies inside a stability group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StabilityAxis {
    /// Training seeds of one run configuration.
    Seeds,
    /// Prompt templates of one method at one seed.
    Templates,
}

impl StabilityAxis {
    /// `seeds` or `templates`.
    pub fn name(self) -> &'static str {
        match self {
            StabilityAxis::Seeds => "seeds",
            StabilityAxis::Templates => "templates",
        }
    }
}

/// A prompt template id: one ASCII uppercase letter and a positive decimal number (`P3`, `C12`).
/// Ordered by letter, then by number (`P2` before `P10`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TemplateId {
    letter: char,
    number: u64,
    text: String,
}

impl TemplateId {
    /// Parses a template id; `None` when `text` is not a letter followed by digits.
    pub fn parse(text: &str) -> Option<Self> {
        let mut chars = text.chars();
        let letter = chars.next().filter(char::is_ascii_uppercase)?;
        let digits = chars.as_str();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(TemplateId { letter, number: digits.parse().ok()?, text: text.to_string() })
    }

    /// The id as written (`P3`).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialOrd for TemplateId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TemplateId {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.letter, self.number, &self.text).cmp(&(other.letter, other.number, &other.text))
    }
}

/// Splits a probe into `(method, template)` by the convention of the module docs:
/// `zero-shot:P3` → `("zero-shot", Some(P3))`; `linear-ce` → `("linear-ce", None)`.
pub fn split_template(probe: &str) -> (&str, Option<TemplateId>) {
    match probe.rsplit_once(':') {
        Some((method, id)) if !method.is_empty() => match TemplateId::parse(id) {
            Some(template) => (method, Some(template)),
            None => (probe, None),
        },
        _ => (probe, None),
    }
}

/// The spread of one metric within a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSpread {
    /// Record metric name (one of [`STABILITY_METRICS`]).
    pub metric: &'static str,
    /// Members that carry the metric.
    pub n: usize,
    pub mean: f64,
    /// Sample std (ddof = 1); absent when `n < 2`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
}

/// One stability group: what is held fixed, what varies, and the spread of each metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StabilityRow {
    pub axis: StabilityAxis,
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    /// The probe without its template suffix.
    pub method: String,
    pub calibrator: String,
    pub label_fraction: f64,
    pub condition: Condition,
    /// Seeds axis: the template held fixed (when the probe carries one); templates axis: absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Templates axis: the seed held fixed; seeds axis: absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The members of the group in summation order: seeds (seeds axis) or template ids (templates
    /// axis), as text.
    pub members: Vec<String>,
    /// One entry per metric of [`STABILITY_METRICS`] observed in the group, in that order.
    pub metrics: Vec<MetricSpread>,
}

impl StabilityRow {
    /// The spread of `metric`, if observed.
    pub fn metric(&self, metric: &str) -> Option<&MetricSpread> {
        self.metrics.iter().find(|m| m.metric == metric)
    }
}

/// The calibration-stability table of a run set (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CalibrationStability {
    /// [`STABILITY_METRICS`].
    pub metrics: Vec<&'static str>,
    pub rows: Vec<StabilityRow>,
}

impl CalibrationStability {
    /// Rows of one axis.
    pub fn axis(&self, axis: StabilityAxis) -> impl Iterator<Item = &StabilityRow> + '_ {
        self.rows.iter().filter(move |r| r.axis == axis)
    }
}

/// What a group holds fixed (its sort order is the table's row order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct GroupOf {
    axis: StabilityAxis,
    encoder: String,
    dataset: String,
    regime: Regime,
    method: String,
    calibrator: String,
    label_fraction: LabelFraction,
    condition: Condition,
    /// Seeds axis: the template (`None` sorts first); templates axis: `None`.
    template: Option<TemplateId>,
    /// Templates axis: the seed; seeds axis: `None`.
    seed: Option<u64>,
}

/// A group member: a seed or a template (each group uses one kind).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Member {
    Seed(u64),
    Template(TemplateId),
}

impl Member {
    fn text(&self) -> String {
        match self {
            Member::Seed(s) => s.to_string(),
            Member::Template(t) => t.as_str().to_string(),
        }
    }
}

/// `(n, mean, std)` of `values` in the given order (see the module docs; `std` is `None` for `n < 2`).
pub fn mean_and_sample_std(values: &[f64]) -> (usize, f64, Option<f64>) {
    let n = values.len();
    if n == 0 {
        return (0, f64::NAN, None);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (n, mean, None);
    }
    let first = values[0];
    let shifted_mean = values.iter().map(|v| v - first).sum::<f64>() / n as f64;
    let ss: f64 = values.iter().map(|v| (v - first - shifted_mean).powi(2)).sum();
    (n, mean, Some((ss / (n - 1) as f64).sqrt()))
}

/// The calibration-stability table of `set` (see the module docs).
pub fn calibration_stability(set: &RunRecordSet) -> CalibrationStability {
    // group → member → the record's metrics (run keys are unique, so each member occurs once per group).
    let mut groups: BTreeMap<GroupOf, BTreeMap<Member, &BTreeMap<String, f64>>> = BTreeMap::new();
    for located in set.records() {
        let key = &located.key.group;
        let (method, template) = split_template(&key.probe);
        let base = |axis, template, seed| GroupOf {
            axis,
            encoder: key.encoder.clone(),
            dataset: key.dataset.clone(),
            regime: key.regime,
            method: method.to_string(),
            calibrator: key.calibrator.clone(),
            label_fraction: key.label_fraction,
            condition: key.condition.clone(),
            template,
            seed,
        };
        let metrics = &located.record.metrics;
        groups
            .entry(base(StabilityAxis::Seeds, template.clone(), None))
            .or_default()
            .insert(Member::Seed(located.key.seed), metrics);
        if let Some(t) = template {
            groups
                .entry(base(StabilityAxis::Templates, None, Some(located.key.seed)))
                .or_default()
                .insert(Member::Template(t), metrics);
        }
    }
    let mut rows = Vec::with_capacity(groups.len());
    for (group, members) in groups {
        let metrics: Vec<MetricSpread> = STABILITY_METRICS
            .iter()
            .filter_map(|&metric| {
                let values: Vec<f64> = members.values().filter_map(|m| m.get(metric).copied()).collect();
                let (n, mean, std) = mean_and_sample_std(&values);
                (n > 0).then_some(MetricSpread { metric, n, mean, std })
            })
            .collect();
        if metrics.is_empty() {
            continue;
        }
        rows.push(StabilityRow {
            axis: group.axis,
            encoder: group.encoder,
            dataset: group.dataset,
            regime: group.regime,
            method: group.method,
            calibrator: group.calibrator,
            label_fraction: group.label_fraction.get(),
            condition: group.condition,
            template: group.template.map(|t| t.as_str().to_string()),
            seed: group.seed,
            members: members.keys().map(Member::text).collect(),
            metrics,
        });
    }
    CalibrationStability { metrics: STABILITY_METRICS.to_vec(), rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_record::RunRecord;
    use proptest::prelude::*;

    fn rec(probe: &str, seed: u64, metrics: &[(&str, f64)]) -> RunRecord {
        RunRecord {
            encoder: "E".into(),
            dataset: "D".into(),
            regime: Regime::ZeroShot,
            probe: probe.into(),
            calibrator: "none".into(),
            label_fraction: 1.0,
            seed,
            condition: Condition::Clean,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        }
    }

    #[test]
    fn template_suffix_convention() {
        assert_eq!(split_template("zero-shot:P3").1.unwrap().as_str(), "P3");
        assert_eq!(split_template("zero-shot:P3").0, "zero-shot");
        assert_eq!(split_template("coop:mcm:C12").0, "coop:mcm");
        for plain in ["linear-ce", "knn@0.5", "my:label", "x:P", "x:p1", ":P1", "x:P1a", "x:PP1"] {
            assert_eq!(split_template(plain), (plain, None), "{plain}");
        }
        let mut ids: Vec<TemplateId> =
            ["P10", "C2", "P2", "P1"].iter().map(|t| TemplateId::parse(t).unwrap()).collect();
        ids.sort();
        let order: Vec<&str> = ids.iter().map(TemplateId::as_str).collect();
        assert_eq!(order, ["C2", "P1", "P2", "P10"]);
    }

    #[test]
    fn seeds_and_templates_groups() {
        // Dyadic values: means exact by construction. Templates P1, P2 at seeds 0 and 1; P3 at seed 0.
        let set = RunRecordSet::from_records(
            vec![
                rec("zero-shot:P1", 0, &[("ece", 0.25), ("accuracy", 0.5)]),
                rec("zero-shot:P2", 0, &[("ece", 0.5)]),
                rec("zero-shot:P3", 0, &[("ece", 0.75)]),
                rec("zero-shot:P1", 1, &[("ece", 0.125)]),
                rec("zero-shot:P2", 1, &[("ece", 0.125), ("macro_auroc", 0.9)]),
            ],
            "mem",
        )
        .unwrap();
        let t = calibration_stability(&set);
        let seeds: Vec<&StabilityRow> = t.axis(StabilityAxis::Seeds).collect();
        assert_eq!(seeds.len(), 3);
        assert_eq!(seeds[0].template.as_deref(), Some("P1"));
        assert_eq!(seeds[0].members, ["0", "1"]);
        let p1_ece = seeds[0].metric("ece").unwrap();
        assert_eq!((p1_ece.n, p1_ece.mean), (2, 0.1875));
        // ddof 1 of {0.25, 0.125}: |0.125| / √2.
        assert!((p1_ece.std.unwrap() - 0.125 / 2f64.sqrt()).abs() < 1e-15);
        let p1_acc = seeds[0].metric("accuracy").unwrap();
        assert_eq!((p1_acc.n, p1_acc.mean, p1_acc.std), (1, 0.5, None));
        // P3: one seed → n 1, no std. P2 has no accuracy; macro_auroc is not a stability metric.
        assert_eq!(seeds[2].metric("ece").unwrap().std, None);
        assert!(seeds[1].metric("accuracy").is_none() && seeds[1].metric("macro_auroc").is_none());

        let templates: Vec<&StabilityRow> = t.axis(StabilityAxis::Templates).collect();
        assert_eq!(templates.len(), 2);
        assert_eq!((templates[0].seed, templates[0].method.as_str()), (Some(0), "zero-shot"));
        assert_eq!(templates[0].members, ["P1", "P2", "P3"]);
        let ece = templates[0].metric("ece").unwrap();
        assert_eq!((ece.n, ece.mean, ece.std), (3, 0.5, Some(0.25)));
        let ece1 = templates[1].metric("ece").unwrap();
        assert_eq!((ece1.n, ece1.mean, ece1.std), (2, 0.125, Some(0.0)));
        // Serialised: no NaN, an absent std is omitted.
        let json = serde_json::to_string(&t).unwrap();
        assert!(!json.contains("NaN") && !json.contains("null"), "{json}");
    }

    #[test]
    fn plain_probes_have_only_seed_rows() {
        let mut r = rec("linear-ce", 0, &[("mce", 0.5)]);
        r.regime = Regime::Frozen;
        let mut s = r.clone();
        s.seed = 4;
        let t = calibration_stability(&RunRecordSet::from_records(vec![s, r], "mem").unwrap());
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].members, ["0", "4"]);
        assert_eq!(t.rows[0].metric("mce").unwrap().std, Some(0.0));
        // A group without any stability metric gives no row.
        let none = rec("linear-ce", 0, &[("brier", 0.5)]);
        assert!(
            calibration_stability(&RunRecordSet::from_records(vec![none], "mem").unwrap()).rows.is_empty()
        );
    }

    fn records_strategy() -> impl Strategy<Value = Vec<RunRecord>> {
        // Up to 3 templates × 4 seeds × 2 calibrators, each present or not, with random metric values.
        proptest::collection::vec((any::<bool>(), 0.0f64..1.0, 0.0f64..1.0), 24).prop_map(|cells| {
            cells
                .into_iter()
                .enumerate()
                .filter(|(_, (keep, _, _))| *keep)
                .map(|(i, (_, a, e))| {
                    let mut r = rec(
                        &format!("zero-shot:P{}", i % 3 + 1),
                        (i / 3 % 4) as u64,
                        &[("accuracy", a), ("ece", e), ("mce", e * a)],
                    );
                    r.calibrator = if i >= 12 { "temperature".into() } else { "none".into() };
                    r
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn std_is_non_negative_and_finite(records in records_strategy()) {
            let t = calibration_stability(&RunRecordSet::from_records(records, "mem").unwrap());
            for row in &t.rows {
                for m in &row.metrics {
                    prop_assert!(m.n >= 1 && m.mean.is_finite());
                    prop_assert_eq!(m.std.is_some(), m.n >= 2);
                    if let Some(s) = m.std {
                        prop_assert!(s.is_finite() && s >= 0.0);
                    }
                }
            }
        }

        #[test]
        fn a_constant_metric_has_zero_std(records in records_strategy(), c in 0.0f64..1.0) {
            let records: Vec<RunRecord> = records
                .into_iter()
                .map(|mut r| { r.metrics.insert("adaptive_ece".into(), c); r })
                .collect();
            let t = calibration_stability(&RunRecordSet::from_records(records, "mem").unwrap());
            for row in &t.rows {
                let m = row.metric("adaptive_ece").unwrap();
                prop_assert_eq!(m.std, (m.n >= 2).then_some(0.0));
            }
        }

        #[test]
        fn record_order_does_not_change_the_table(
            records in records_strategy(),
            keys in proptest::collection::vec(any::<u64>(), 24),
        ) {
            let base = calibration_stability(&RunRecordSet::from_records(records.clone(), "mem").unwrap());
            let mut shuffled: Vec<(u64, RunRecord)> = keys.into_iter().zip(records).collect();
            shuffled.sort_by_key(|(k, _)| *k);
            let shuffled = shuffled.into_iter().map(|(_, r)| r).collect();
            let again = calibration_stability(&RunRecordSet::from_records(shuffled, "mem").unwrap());
            prop_assert_eq!(base, again);
        }
    }
}
