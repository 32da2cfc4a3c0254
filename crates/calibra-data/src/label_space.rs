//! What a dataset is labelled with: the task kind, the class (or label) names, and one sample's
//! [`Target`].

use serde::Serialize;

/// What kind of labels a dataset carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// One class per sample out of `k` unordered classes (ISIC 2019, ImageFolder).
    Multiclass,
    /// One grade per sample out of `k` ordered grades (APTOS 2019 0–4, RetinaMNIST).
    Ordinal,
    /// `k` independent binary labels per sample, each possibly missing (CheXpert, MIMIC-CXR, ChestMNIST).
    Multilabel,
}

/// The label space: the task kind and the class (or label) names in index order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelSpace {
    pub kind: TaskKind,
    pub names: Vec<String>,
}

impl LabelSpace {
    /// Number of classes (multiclass, ordinal) or labels (multilabel).
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there are no classes at all.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The label(s) of one sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// Class (or grade) index into [`LabelSpace::names`].
    Class(usize),
    /// One entry per label: `Some(true)` positive, `Some(false)` negative, `None` missing
    /// (blank, or uncertain under the `ignore` policy): excluded from that label's metrics.
    Labels(Vec<Option<bool>>),
}
