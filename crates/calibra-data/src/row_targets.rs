//! The targets of some rows of a dataset, in the one form its label space's kind gives: class indices
//! (multiclass, ordinal) or a row-major `rows × labels` table of optional binary labels (multilabel).
//! Every consumer (probes, fine-tuning, CoOp, predictions files) reads targets through this, so a
//! sample whose target does not fit the label space is an error naming it, never a silent class 0.

use crate::dataset::{Dataset, Target, TaskKind};
use crate::error::DataError;

/// The targets of a list of rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowTargets {
    /// One class (or grade) index per row.
    Classes(Vec<usize>),
    /// `labels.len()` entries per row, row-major: `Some(true)` positive, `Some(false)` negative,
    /// `None` missing.
    Labels(Vec<Option<bool>>),
}

impl Dataset {
    /// The targets of `rows` (indices into `samples`), in the form of the label space's kind. A row out
    /// of range, or a sample whose target is of the other kind or size, is an error naming it.
    pub fn row_targets(&self, rows: &[usize]) -> Result<RowTargets, DataError> {
        let k = self.labels.len();
        let sample = |i: usize| {
            self.samples.get(i).ok_or_else(|| {
                DataError::Invalid(format!(
                    "dataset `{}`: row {i} is out of range ({} samples)",
                    self.name,
                    self.samples.len()
                ))
            })
        };
        let misfit = |i: usize, target: &Target| {
            DataError::Invalid(format!(
                "dataset `{}`: sample `{}` has target {target:?}, which does not fit the {:?} label space of {k} names",
                self.name, self.samples[i].id, self.labels.kind
            ))
        };
        match self.labels.kind {
            TaskKind::Multilabel => {
                let mut table = Vec::with_capacity(rows.len() * k);
                for &i in rows {
                    match &sample(i)?.target {
                        Target::Labels(v) if v.len() == k => table.extend_from_slice(v),
                        other => return Err(misfit(i, other)),
                    }
                }
                Ok(RowTargets::Labels(table))
            }
            TaskKind::Multiclass | TaskKind::Ordinal => rows
                .iter()
                .map(|&i| match &sample(i)?.target {
                    Target::Class(c) if *c < k => Ok(*c),
                    other => Err(misfit(i, other)),
                })
                .collect::<Result<_, _>>()
                .map(RowTargets::Classes),
        }
    }

    /// The class indices of `rows` of a multiclass or ordinal dataset; an error for a multilabel one.
    pub fn row_classes(&self, rows: &[usize]) -> Result<Vec<usize>, DataError> {
        match self.row_targets(rows)? {
            RowTargets::Classes(c) => Ok(c),
            RowTargets::Labels(_) => Err(DataError::Invalid(format!(
                "dataset `{}` is multilabel; expected one class per sample",
                self.name
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{LabelSpace, Metadata, Sample};
    use crate::image_source::ImageSource;

    fn dataset(kind: TaskKind, targets: Vec<Target>) -> Dataset {
        Dataset {
            name: "toy".into(),
            labels: LabelSpace { kind, names: vec!["a".into(), "b".into()] },
            samples: targets
                .into_iter()
                .enumerate()
                .map(|(i, target)| Sample {
                    id: format!("s{i}"),
                    image: ImageSource::File(format!("/x/{i}.png").into()),
                    target,
                    metadata: Metadata::default(),
                    official_split: None,
                })
                .collect(),
            skipped: Vec::new(),
            on_bad_image: crate::BadImagePolicy::Fail,
        }
    }

    #[test]
    fn classes_and_label_tables_come_in_row_order() {
        let d = dataset(TaskKind::Multiclass, vec![Target::Class(1), Target::Class(0), Target::Class(1)]);
        assert_eq!(d.row_targets(&[2, 1]).unwrap(), RowTargets::Classes(vec![1, 0]));
        assert_eq!(d.row_classes(&[1]).unwrap(), vec![0]);
        let d = dataset(
            TaskKind::Multilabel,
            vec![Target::Labels(vec![Some(true), None]), Target::Labels(vec![Some(false), Some(true)])],
        );
        assert_eq!(
            d.row_targets(&[1, 0]).unwrap(),
            RowTargets::Labels(vec![Some(false), Some(true), Some(true), None])
        );
    }

    #[test]
    fn a_misfit_target_is_an_error_naming_the_sample_not_class_zero() {
        let d = dataset(TaskKind::Multiclass, vec![Target::Class(0), Target::Labels(vec![Some(true), None])]);
        let e = d.row_targets(&[0, 1]).unwrap_err().to_string();
        assert!(e.contains("sample `s1`") && e.contains("Multiclass"), "{e}");
        let e = d.row_targets(&[5]).unwrap_err().to_string();
        assert!(e.contains("row 5 is out of range (2 samples)"), "{e}");
        let d = dataset(TaskKind::Multiclass, vec![Target::Class(2)]);
        assert!(d.row_targets(&[0]).unwrap_err().to_string().contains("sample `s0`"));
        let d = dataset(TaskKind::Multilabel, vec![Target::Labels(vec![Some(true)])]);
        assert!(d.row_targets(&[0]).is_err(), "a label vector of the wrong size");
        assert!(d.row_classes(&[]).unwrap_err().to_string().contains("multilabel"));
    }
}
