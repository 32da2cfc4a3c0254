//! The in-memory predictions table and its invariants.

use crate::PredictionsError;
use calibra_metrics::input::{softmax_rows, validate_probabilities, validate_unit_interval};

/// Whether the score columns are logits (`logit_<class>`) or probabilities (`prob_<class>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreKind {
    Logit,
    Probability,
}

impl ScoreKind {
    /// The column-name prefix of this kind, including the underscore.
    pub fn prefix(self) -> &'static str {
        match self {
            ScoreKind::Logit => "logit_",
            ScoreKind::Probability => "prob_",
        }
    }
}

/// The ground truth of every row.
#[derive(Debug, Clone, PartialEq)]
pub enum Targets {
    /// One class index per row (`label` column), in `0..K`.
    Classes(Vec<usize>),
    /// Row-major `n × L` multilabel targets (`label_<name>` columns); `None` = blank (unobserved or
    /// masked, e.g. a CheXpert uncertain label under the ignore policy).
    Labels(Vec<Option<bool>>),
}

/// The kind of prediction problem a file describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Two mutually exclusive classes (`label` with K = 2).
    Binary,
    /// K ≥ 3 mutually exclusive classes (`label`).
    Multiclass,
    /// Independent binary labels (`label_<name>` columns).
    Multilabel,
}

impl Task {
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Binary => "binary",
            Task::Multiclass => "multiclass",
            Task::Multilabel => "multilabel",
        }
    }
}

/// A validated predictions table: `n` rows, `K` score columns (classes, or labels for multilabel).
#[derive(Debug, Clone, PartialEq)]
pub struct Predictions {
    ids: Vec<String>,
    class_names: Vec<String>,
    score_kind: ScoreKind,
    scores: Vec<f64>,
    targets: Targets,
}

impl Predictions {
    /// Build a table, checking every invariant the file format promises: at least one row, unique ids,
    /// `scores` is `n × K`, finite; probabilities in [0, 1] and (single-label tasks) rows summing to 1
    /// within 1e-6; class indices in range; K ≥ 2 for single-label tasks. Row numbers in errors are
    /// 0-based data rows; the CSV reader reports file lines instead.
    pub fn new(
        ids: Vec<String>,
        class_names: Vec<String>,
        score_kind: ScoreKind,
        scores: Vec<f64>,
        targets: Targets,
    ) -> Result<Self, PredictionsError> {
        let invalid = |m: String| PredictionsError::Invalid(m);
        let n = ids.len();
        let k = class_names.len();
        if n == 0 {
            return Err(invalid("no rows".into()));
        }
        if k == 0 {
            return Err(invalid("no score columns".into()));
        }
        if scores.len() != n * k {
            return Err(invalid(format!("{} scores for {n} rows × {k} classes", scores.len())));
        }
        if let Some((i, name)) = duplicate(&class_names) {
            return Err(invalid(format!("class `{name}` appears twice (position {i})")));
        }
        if let Some((i, id)) = duplicate(&ids) {
            return Err(invalid(format!("id `{id}` appears twice (row {i})")));
        }
        match &targets {
            Targets::Classes(labels) => {
                if k < 2 {
                    return Err(invalid(format!("a single-label task needs at least 2 classes, found {k}")));
                }
                if labels.len() != n {
                    return Err(invalid(format!("{} labels for {n} rows", labels.len())));
                }
                if let Some(row) = labels.iter().position(|&l| l >= k) {
                    return Err(invalid(format!(
                        "row {row}: label {} is not a class index in 0..{k}",
                        labels[row]
                    )));
                }
            }
            Targets::Labels(values) => {
                if values.len() != n * k {
                    return Err(invalid(format!("{} label cells for {n} rows × {k} labels", values.len())));
                }
            }
        }
        let check = match (score_kind, &targets) {
            (ScoreKind::Probability, Targets::Classes(_)) => validate_probabilities(&scores, k).map(|_| ()),
            (ScoreKind::Probability, Targets::Labels(_)) => validate_unit_interval(&scores, k).map(|_| ()),
            (ScoreKind::Logit, _) => calibra_metrics::input::validate_finite(&scores, k).map(|_| ()),
        };
        check.map_err(|e| invalid(e.to_string()))?;
        Ok(Predictions { ids, class_names, score_kind, scores, targets })
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Number of score columns: classes, or labels for a multilabel task.
    pub fn num_classes(&self) -> usize {
        self.class_names.len()
    }

    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    pub fn score_kind(&self) -> ScoreKind {
        self.score_kind
    }

    /// The score matrix as stored (row-major `n × K`), logits or probabilities per [`Self::score_kind`].
    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    pub fn targets(&self) -> &Targets {
        &self.targets
    }

    pub fn task(&self) -> Task {
        match (&self.targets, self.num_classes()) {
            (Targets::Labels(_), _) => Task::Multilabel,
            (Targets::Classes(_), 2) => Task::Binary,
            (Targets::Classes(_), _) => Task::Multiclass,
        }
    }

    /// The logits, if the file stored logits.
    pub fn logits(&self) -> Option<&[f64]> {
        (self.score_kind == ScoreKind::Logit).then_some(self.scores.as_slice())
    }

    /// Probabilities (row-major `n × K`): stored probabilities as they are; logits through a row
    /// softmax for single-label tasks, or an element-wise sigmoid for multilabel tasks.
    pub fn probabilities(&self) -> Vec<f64> {
        match (self.score_kind, &self.targets) {
            (ScoreKind::Probability, _) => self.scores.clone(),
            (ScoreKind::Logit, Targets::Classes(_)) => softmax_rows(&self.scores, self.num_classes()),
            (ScoreKind::Logit, Targets::Labels(_)) => self.scores.iter().map(|&z| sigmoid(z)).collect(),
        }
    }

    /// A copy of this table with new scores of the given kind (same ids, classes and targets),
    /// validated like [`Self::new`]. This is how calibrators emit calibrated predictions.
    pub fn with_scores(&self, score_kind: ScoreKind, scores: Vec<f64>) -> Result<Self, PredictionsError> {
        Predictions::new(self.ids.clone(), self.class_names.clone(), score_kind, scores, self.targets.clone())
    }
}

/// Numerically stable logistic function.
fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// The first repeated element (index of its second occurrence, the element), if any.
fn duplicate(items: &[String]) -> Option<(usize, &str)> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.iter().enumerate().find(|(_, s)| !seen.insert(s.as_str())).map(|(i, s)| (i, s.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i}")).collect()
    }

    #[test]
    fn task_follows_targets_and_class_count() {
        let names = vec!["a".to_string(), "b".to_string()];
        let p = Predictions::new(
            ids(1),
            names.clone(),
            ScoreKind::Logit,
            vec![0.0, 1.0],
            Targets::Classes(vec![1]),
        )
        .unwrap();
        assert_eq!(p.task(), Task::Binary);
        let p = Predictions::new(
            ids(1),
            names,
            ScoreKind::Logit,
            vec![0.0, 1.0],
            Targets::Labels(vec![Some(true), None]),
        )
        .unwrap();
        assert_eq!(p.task(), Task::Multilabel);
        let probs = p.probabilities();
        assert_eq!(probs[0], 0.5);
        assert!((probs[1] - 1.0 / (1.0 + (-1.0f64).exp())).abs() < 1e-15);
    }

    #[test]
    fn invariants_are_enforced() {
        let names = vec!["a".to_string(), "b".to_string()];
        let bad_sum = Predictions::new(
            ids(1),
            names.clone(),
            ScoreKind::Probability,
            vec![0.3, 0.3],
            Targets::Classes(vec![0]),
        );
        assert!(bad_sum.unwrap_err().to_string().contains("sum to"));
        let bad_label = Predictions::new(
            ids(1),
            names.clone(),
            ScoreKind::Logit,
            vec![0.3, 0.3],
            Targets::Classes(vec![2]),
        );
        assert!(bad_label.unwrap_err().to_string().contains("label 2"));
        let dup = Predictions::new(
            vec!["x".into(), "x".into()],
            names,
            ScoreKind::Logit,
            vec![0.0; 4],
            Targets::Classes(vec![0, 1]),
        );
        assert!(dup.unwrap_err().to_string().contains("id `x` appears twice"));
    }
}
