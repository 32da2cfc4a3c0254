//! The CSV writer: the exact inverse of the reader (floats written in shortest round-trip form).

use crate::table::{Predictions, Targets};
use crate::{PredictionsError, write_atomically};
use std::io::Write;
use std::path::Path;

/// Write `predictions` to `path` atomically (temp file + rename): a crash never leaves a partial file.
pub fn write_predictions(path: &Path, predictions: &Predictions) -> Result<(), PredictionsError> {
    write_atomically(path, |w| write_predictions_to(w, predictions))
}

/// Write `predictions` as CSV to any writer. Columns: `id`, the target column(s), then the scores.
pub fn write_predictions_to(w: &mut dyn Write, predictions: &Predictions) -> std::io::Result<()> {
    let k = predictions.num_classes();
    let prefix = predictions.score_kind().prefix();
    let names = predictions.class_names();
    let mut header = vec!["id".to_string()];
    match predictions.targets() {
        Targets::Classes(_) => header.push("label".into()),
        Targets::Labels(_) => header.extend(names.iter().map(|n| format!("label_{n}"))),
    }
    header.extend(names.iter().map(|n| format!("{prefix}{n}")));
    let mut out = csv::Writer::from_writer(w);
    out.write_record(&header)?;
    let mut row: Vec<String> = Vec::with_capacity(header.len());
    for (i, id) in predictions.ids().iter().enumerate() {
        row.clear();
        row.push(id.clone());
        match predictions.targets() {
            Targets::Classes(labels) => row.push(labels[i].to_string()),
            Targets::Labels(values) => row.extend(values[i * k..(i + 1) * k].iter().map(|v| match v {
                Some(true) => "1".to_string(),
                Some(false) => "0".to_string(),
                None => String::new(),
            })),
        }
        row.extend(predictions.scores()[i * k..(i + 1) * k].iter().map(|v| v.to_string()));
        out.write_record(&row)?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_predictions_from;
    use crate::table::ScoreKind;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn write_then_read_is_the_identity(
            logits in proptest::collection::vec(-1e6f64..1e6, 3..30),
            seed in 0usize..1000,
        ) {
            let k = 3;
            let n = logits.len() / k;
            let scores = logits[..n * k].to_vec();
            let ids: Vec<String> = (0..n).map(|i| format!("img,{i}\"q")).collect();
            let labels: Vec<usize> = (0..n).map(|i| (i + seed) % k).collect();
            let names = vec!["a b".to_string(), "c".to_string(), "d".to_string()];
            let p = Predictions::new(ids, names, ScoreKind::Logit, scores, Targets::Classes(labels)).unwrap();
            let mut buf = Vec::new();
            write_predictions_to(&mut buf, &p).unwrap();
            let back = read_predictions_from(buf.as_slice(), "mem").unwrap();
            prop_assert_eq!(back, p);
        }
    }

    #[test]
    fn multilabel_round_trip_keeps_blanks() {
        let p = Predictions::new(
            vec!["a".into(), "b".into()],
            vec!["x".into(), "y".into()],
            ScoreKind::Probability,
            vec![0.1, 0.9, 0.5, 0.25],
            Targets::Labels(vec![Some(true), None, None, Some(false)]),
        )
        .unwrap();
        let mut buf = Vec::new();
        write_predictions_to(&mut buf, &p).unwrap();
        assert_eq!(read_predictions_from(buf.as_slice(), "mem").unwrap(), p);
    }
}
