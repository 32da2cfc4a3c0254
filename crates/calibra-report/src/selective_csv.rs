//! CSV files of `calibra eval --selective`: per run (`selective_runs.csv`, `conformal_sets.csv`,
//! `shift_detection.csv`) and per cell (`selective_cells.csv`, the rows of the report's per-cell
//! table). Written only when the evaluation has the selective analyses.

use crate::csv_cells::{
    CellColumns, CsvTableError, Number, RunColumns, run_columns, serialized_table, table_with_header,
};
use calibra_crs::selective_analyses::SelectiveReport;
use serde::Serialize;

#[derive(Serialize)]
struct SelectiveRun {
    samples: usize,
    aurc: Number,
    eaurc: Number,
    augrc: Number,
}

#[derive(Default, Serialize)]
struct ConformalSet {
    calibration_samples: usize,
    quantiles: String,
    samples: usize,
    excluded: usize,
    coverage: Number,
    mean_set_size: Number,
    empty_fraction: Number,
}

#[derive(Default, Serialize)]
struct ShiftDetection {
    clean_samples: usize,
    shifted_samples: usize,
    auroc: Number,
    fpr_at_95_tpr: Number,
}

#[derive(Default, Serialize)]
struct SelectiveCell {
    condition: String,
    runs: usize,
    aurc: Number,
    eaurc: Number,
    augrc: Number,
    coverage: Number,
    mean_set_size: Number,
    conformal_runs: usize,
    shift_auroc: Number,
    shift_fpr_at_95_tpr: Number,
}

/// The four CSV files (relative path, bytes).
pub(crate) fn selective_csv_files(r: &SelectiveReport) -> Result<Vec<(String, Vec<u8>)>, CsvTableError> {
    // `selective_runs.csv` ends with one `risk_at_<coverage>` column per point of the coverage grid.
    let mut runs_header: Vec<String> =
        ["encoder", "dataset", "regime", "probe", "calibrator", "label_fraction", "seed", "condition"]
            .into_iter()
            .chain(["samples", "aurc", "eaurc", "augrc"])
            .map(String::from)
            .collect();
    if let Some(x) = r.runs.first() {
        runs_header.extend(x.risk_coverage.iter().map(|p| format!("risk_at_{}", p.coverage)));
    }
    let runs = r.runs.iter().map(|x| {
        (
            run_columns(&x.run),
            SelectiveRun {
                samples: x.samples,
                aurc: Number(x.aurc),
                eaurc: Number(x.eaurc),
                augrc: Number(x.augrc),
            },
            x.risk_coverage.iter().map(|p| Number::of(p.risk)).collect::<Vec<_>>(),
        )
    });
    let conformal = r.conformal.iter().map(|x| {
        (
            run_columns(&x.run),
            ConformalSet {
                calibration_samples: x.calibration_samples,
                quantiles: x.quantiles.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(" "),
                samples: x.samples,
                excluded: x.excluded,
                coverage: Number::of(x.coverage),
                mean_set_size: Number::of(x.mean_set_size),
                empty_fraction: Number::of(x.empty_fraction),
            },
        )
    });
    let shift = r.shift_detection.iter().map(|x| {
        (
            run_columns(&x.run),
            ShiftDetection {
                clean_samples: x.clean_samples,
                shifted_samples: x.shifted_samples,
                auroc: Number(x.auroc),
                fpr_at_95_tpr: Number(x.fpr_at_95_tpr),
            },
        )
    });
    let cells = r.cells.iter().map(|c| {
        (
            CellColumns::new(&c.encoder, &c.dataset, c.regime, &c.probe, &c.calibrator, c.label_fraction),
            SelectiveCell {
                condition: c.condition.to_string(),
                runs: c.runs,
                aurc: Number(c.aurc),
                eaurc: Number(c.eaurc),
                augrc: Number(c.augrc),
                coverage: Number(c.coverage),
                mean_set_size: Number(c.mean_set_size),
                conformal_runs: c.conformal_runs,
                shift_auroc: Number(c.shift_auroc),
                shift_fpr_at_95_tpr: Number(c.shift_fpr_at_95_tpr),
            },
        )
    });
    Ok(vec![
        ("selective_runs.csv".to_string(), table_with_header("selective_runs.csv", &runs_header, runs)?),
        (
            "conformal_sets.csv".to_string(),
            serialized_table::<(RunColumns, ConformalSet)>("conformal_sets.csv", conformal)?,
        ),
        (
            "shift_detection.csv".to_string(),
            serialized_table::<(RunColumns, ShiftDetection)>("shift_detection.csv", shift)?,
        ),
        ("selective_cells.csv".to_string(), serialized_table("selective_cells.csv", cells)?),
    ])
}
