//! Every CSV file of an evaluation (`calibra eval`'s output directory), as (relative path, bytes):
//! `metric_rows.csv`, `profiles.csv` (exactly the `calibra crs` input columns: raw values),
//! `crs.csv`, `calibration_stability.csv`, then the encoder-analysis and FOCUS tables
//! ([`crate::focus_csv`]) and, when the evaluation has them, the selective tables
//! ([`crate::selective_csv`]). Numbers: shortest round-trip form, empty where undefined.

use crate::csv_cells::{
    CellColumns, ConditionColumns, CsvTableError, Number, serialized_table, table_with_header,
};
use calibra_crs::evaluation::Evaluation;
use calibra_crs::{CalibrationStability, STABILITY_METRICS};
use serde::Serialize;

/// The CSV files of `e`, in the order `calibra eval` writes them.
pub fn evaluation_csv_files(e: &Evaluation) -> Result<Vec<(String, Vec<u8>)>, CsvTableError> {
    let mut files = vec![
        ("metric_rows.csv".to_string(), metric_rows_csv(e)?),
        ("profiles.csv".to_string(), profiles_csv(e)?),
        ("crs.csv".to_string(), crs_csv(e)?),
        ("calibration_stability.csv".to_string(), calibration_stability_csv(&e.calibration_stability)?),
    ];
    files.extend(crate::focus_csv::focus_csv_files(e)?);
    if let Some(r) = &e.selective {
        files.extend(crate::selective_csv::selective_csv_files(r)?);
    }
    Ok(files)
}

#[derive(Default, Serialize)]
struct MetricValue {
    metric: String,
    mean: Number,
    std: Number,
    n_seeds: usize,
}

/// `metric_rows.csv`: one row per cell, condition and metric (mean and sample std over seeds).
fn metric_rows_csv(e: &Evaluation) -> Result<Vec<u8>, CsvTableError> {
    let rows = e.metric_rows.iter().map(|r| {
        (
            CellColumns::new(&r.encoder, &r.dataset, r.regime, &r.probe, &r.calibrator, r.label_fraction),
            ConditionColumns::from(&r.condition),
            MetricValue {
                metric: r.metric.clone(),
                mean: Number::of(r.mean),
                std: Number(r.std),
                n_seeds: r.n_seeds,
            },
        )
    });
    serialized_table("metric_rows.csv", rows)
}

/// `profiles.csv`: one row per encoder; the selective axis (five axis weights) adds the `calibra crs`
/// column `selective` (raw AUGRC).
fn profiles_csv(e: &Evaluation) -> Result<Vec<u8>, CsvTableError> {
    let selective_axis = e.axes.selective_metric.is_some();
    let mut header: Vec<String> =
        ["encoder", "discrimination", "calibration", "label_efficiency", "robustness"]
            .map(String::from)
            .to_vec();
    if selective_axis {
        header.push(calibra_crs::profile_table::SELECTIVE_COLUMN.to_string());
    }
    let rows = e.profiles.iter().map(|p| {
        let mut values = vec![p.discrimination, p.calibration_error, p.label_efficiency, p.robustness];
        if selective_axis {
            values.push(p.selective_error);
        }
        (&p.encoder, values.into_iter().map(Number).collect::<Vec<_>>())
    });
    table_with_header("profiles.csv", &header, rows)
}

#[derive(Serialize)]
struct CrsTail {
    dominance: Number,
    ideal: Number,
    worst: Number,
    crs: Number,
    crs_lower: Number,
    crs_upper: Number,
    p_rank1: Number,
    p_top3: Number,
    in_panel: bool,
}

/// `crs.csv`: one row per encoder in rank order; one normalised column per axis in use.
fn crs_csv(e: &Evaluation) -> Result<Vec<u8>, CsvTableError> {
    let axes = if e.axes.selective_metric.is_some() { 5 } else { 4 };
    let mut header = vec!["rank".to_string(), "encoder".to_string()];
    header.extend(calibra_crs::axes_of(axes).iter().map(|a| format!("{}_normalized", a.name())));
    header.extend(
        ["dominance", "ideal", "worst", "crs", "crs_lower", "crs_upper", "p_rank1", "p_top3", "in_panel"]
            .map(String::from),
    );
    let mut order: Vec<usize> = (0..e.crs.len()).collect();
    order.sort_by_key(|&i| e.crs[i].rank);
    let rows = order.iter().map(|&i| {
        let c = &e.crs[i];
        (
            c.rank,
            &c.encoder,
            c.normalized.iter().map(|&v| Number::of(v)).collect::<Vec<_>>(),
            CrsTail {
                dominance: Number::of(c.dominance),
                ideal: Number::of(c.ideal),
                worst: Number::of(c.worst),
                crs: Number::of(c.crs),
                crs_lower: Number(c.lower),
                crs_upper: Number(c.upper),
                p_rank1: Number(c.p_rank1),
                p_top3: Number(c.p_top3),
                in_panel: c.in_panel,
            },
        )
    });
    table_with_header("crs.csv", &header, rows)
}

#[derive(Serialize)]
struct StabilityKey<'a> {
    axis: &'static str,
    encoder: &'a str,
    dataset: &'a str,
    regime: &'static str,
    method: &'a str,
    calibrator: &'a str,
    label_fraction: String,
    condition: ConditionColumns,
    template: &'a str,
    seed: String,
    members: String,
}

/// The `_n`, `_mean` and `_std` cells of one metric (all empty when the group does not carry it).
#[derive(Serialize)]
struct SpreadCells {
    n: Option<usize>,
    mean: Number,
    std: Number,
}

/// `calibration_stability.csv`: one row per stability group; per metric of [`STABILITY_METRICS`] its
/// `_n`, `_mean` and `_std` (empty std below 2 members, all three empty when the group does not carry
/// the metric); `members` is `;`-separated (seeds or template ids).
fn calibration_stability_csv(table: &CalibrationStability) -> Result<Vec<u8>, CsvTableError> {
    let mut header: Vec<String> = [
        "axis",
        "encoder",
        "dataset",
        "regime",
        "method",
        "calibrator",
        "label_fraction",
        "condition",
        "perturbation",
        "severity",
        "shift_target",
        "template",
        "seed",
        "members",
    ]
    .map(String::from)
    .to_vec();
    for m in STABILITY_METRICS {
        header.extend(["n", "mean", "std"].map(|s| format!("{m}_{s}")));
    }
    let rows = table.rows.iter().map(|r| {
        let key = StabilityKey {
            axis: r.axis.name(),
            encoder: &r.encoder,
            dataset: &r.dataset,
            regime: r.regime.name(),
            method: &r.method,
            calibrator: &r.calibrator,
            label_fraction: r.label_fraction.to_string(),
            condition: ConditionColumns::from(&r.condition),
            template: r.template.as_deref().unwrap_or_default(),
            seed: r.seed.map(|s| s.to_string()).unwrap_or_default(),
            members: r.members.join(";"),
        };
        let spreads: Vec<SpreadCells> = STABILITY_METRICS
            .iter()
            .map(|m| match r.metric(m) {
                Some(s) => SpreadCells { n: Some(s.n), mean: Number::of(s.mean), std: Number(s.std) },
                None => SpreadCells { n: None, mean: Number(None), std: Number(None) },
            })
            .collect();
        (key, spreads)
    });
    table_with_header("calibration_stability.csv", &header, rows)
}
