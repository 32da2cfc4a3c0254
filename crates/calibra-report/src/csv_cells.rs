//! The cells and writers every CSV table of an evaluation shares: number cells in the shortest
//! round-trip form (empty where undefined), the cell-key columns (`encoder … label_fraction`), the
//! run columns (cell key, `seed`, `condition`), the condition columns of metric rows, and the two ways
//! a table is written with the `csv` crate: rows of a `#[derive(Serialize)]` type, whose header is
//! the type's field names (written even when there are no rows), or rows under a header computed at
//! run time (tables whose columns depend on the evaluation, such as the CRS axes).

use calibra_crs::focus_analyses::RunLabel;
use calibra_crs::{Condition, Regime};
use serde::{Serialize, Serializer};

/// What can go wrong writing a CSV table (into memory: only serialisation can fail).
#[derive(Debug, thiserror::Error)]
#[error("writing the CSV table `{table}`: {source}")]
pub struct CsvTableError {
    pub table: String,
    #[source]
    pub source: csv::Error,
}

/// A number cell: Rust's `Display` of the `f64`, the shortest digits that read back to the same
/// value, never an exponent (`0.1`, `1`, `0.0000001`); empty when absent or not finite.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Number(pub Option<f64>);

impl Number {
    pub fn of(v: f64) -> Self {
        Number(Some(v))
    }
}

impl From<Option<f64>> for Number {
    fn from(v: Option<f64>) -> Self {
        Number(v)
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(v) if v.is_finite() => s.collect_str(&v),
            _ => s.serialize_str(""),
        }
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) if v.is_finite() => write!(f, "{v}"),
            _ => Ok(()),
        }
    }
}

/// The cell key of a table row: which encoder, dataset, regime, probe, calibrator and label fraction.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CellColumns {
    pub encoder: String,
    pub dataset: String,
    pub regime: &'static str,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: String,
}

impl CellColumns {
    pub fn new(
        encoder: &str,
        dataset: &str,
        regime: Regime,
        probe: &str,
        calibrator: &str,
        label_fraction: f64,
    ) -> Self {
        CellColumns {
            encoder: encoder.to_string(),
            dataset: dataset.to_string(),
            regime: regime.name(),
            probe: probe.to_string(),
            calibrator: calibrator.to_string(),
            label_fraction: label_fraction.to_string(),
        }
    }
}

/// What follows the cell key in a per-run table: the seed and the condition (`clean`,
/// `blur@3`, `shift:site-b`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SeedCondition {
    pub seed: u64,
    pub condition: String,
}

/// The run columns of a per-run table: the cell key, then `seed` and `condition`.
pub type RunColumns = (CellColumns, SeedCondition);

/// The run columns of `run`.
pub fn run_columns(run: &RunLabel) -> RunColumns {
    (
        CellColumns::new(
            &run.encoder,
            &run.dataset,
            run.regime,
            &run.probe,
            &run.calibrator,
            run.label_fraction,
        ),
        SeedCondition { seed: run.seed, condition: run.condition.to_string() },
    )
}

/// The condition of a metric row split into columns: kind, perturbation, severity, shift target.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConditionColumns {
    pub condition: &'static str,
    pub perturbation: String,
    pub severity: String,
    pub shift_target: String,
}

impl From<&Condition> for ConditionColumns {
    fn from(c: &Condition) -> Self {
        match c {
            Condition::Clean => ConditionColumns { condition: "clean", ..Default::default() },
            Condition::Perturbation { perturbation, severity } => ConditionColumns {
                condition: "perturbation",
                perturbation: perturbation.clone(),
                severity: severity.to_string(),
                shift_target: String::new(),
            },
            Condition::Shift { target } => {
                ConditionColumns { condition: "shift", shift_target: target.clone(), ..Default::default() }
            }
        }
    }
}

/// A CSV file of `rows`, headed by the field names of `R` (taken from a default row, so an empty
/// table still has its header).
pub fn serialized_table<R: Serialize + Default>(
    table: &str,
    rows: impl IntoIterator<Item = R>,
) -> Result<Vec<u8>, CsvTableError> {
    let fail = |source| CsvTableError { table: table.to_string(), source };
    let mut header = csv::Writer::from_writer(Vec::new());
    header.serialize(R::default()).map_err(fail)?;
    let header = header.into_inner().map_err(|e| fail(e.into_error().into()))?;
    let end = header.iter().position(|&b| b == b'\n').map_or(header.len(), |i| i + 1);
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(header[..end].to_vec());
    for row in rows {
        w.serialize(row).map_err(fail)?;
    }
    w.into_inner().map_err(|e| fail(e.into_error().into()))
}

/// A CSV file of `rows` (each serialised as its cells, e.g. a struct followed by a list of numbers)
/// under `header`, for tables whose columns are known only at run time.
pub fn table_with_header<R: Serialize>(
    table: &str,
    header: &[String],
    rows: impl IntoIterator<Item = R>,
) -> Result<Vec<u8>, CsvTableError> {
    let fail = |source| CsvTableError { table: table.to_string(), source };
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    w.write_record(header).map_err(fail)?;
    for row in rows {
        w.serialize(row).map_err(fail)?;
    }
    w.into_inner().map_err(|e| fail(e.into_error().into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Serialize)]
    struct Tail {
        metric: String,
        value: Number,
    }

    #[test]
    fn numbers_take_the_shortest_round_trip_form_and_undefined_ones_are_empty() {
        let row = (
            CellColumns::new("vit", "derm", Regime::Frozen, "linear", "none", 1.0),
            Tail { metric: "ece".into(), value: Number::of(0.1) },
        );
        let csv = String::from_utf8(serialized_table("t", [row]).unwrap()).unwrap();
        assert_eq!(
            csv,
            "encoder,dataset,regime,probe,calibrator,label_fraction,metric,value\nvit,derm,frozen,linear,none,1,ece,0.1\n"
        );
        for (v, cell) in
            [(Some(1e-7), "0.0000001"), (Some(f64::NAN), ""), (Some(f64::INFINITY), ""), (None, "")]
        {
            assert_eq!(Number(v).to_string(), cell);
        }
    }

    #[test]
    fn an_empty_table_keeps_its_header() {
        let csv = serialized_table::<(CellColumns, Tail)>("t", []).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "encoder,dataset,regime,probe,calibrator,label_fraction,metric,value\n"
        );
    }

    #[test]
    fn runtime_headers_take_rows_of_any_shape_and_quote_as_csv_does() {
        let header = ["name".to_string(), "a".to_string(), "b".to_string()];
        let rows = [("x,y".to_string(), vec![Number::of(2.0), Number(None)])];
        let csv = String::from_utf8(table_with_header("t", &header, rows).unwrap()).unwrap();
        assert_eq!(csv, "name,a,b\n\"x,y\",2,\n");
    }
}
