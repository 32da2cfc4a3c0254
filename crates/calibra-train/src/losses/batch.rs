//! `LossBatch`: the logits of one mini-batch with their targets (and, for CLIP-style heads, the
//! frozen zero-shot logits of the same images), validated once so that every loss can rely on it.

use burn::tensor::{DType, Device, Tensor, TensorData};

use crate::error::TrainError;

/// The targets of a batch.
#[derive(Debug, Clone)]
pub enum Targets {
    /// One class label per row, each in `0..K`.
    Classes(Vec<usize>),
    /// Multilabel targets with their mask.
    Multilabel(Box<MultilabelTargets>),
}

/// Multilabel targets: `labels` (1 = positive, 0 = negative, masked entries 0) and `mask`
/// (1 = observed, 0 = uncertain or blank), both `[N, K]` in the logits' dtype.
#[derive(Debug, Clone)]
pub struct MultilabelTargets {
    /// Binary labels, 0 at masked entries.
    pub labels: Tensor<2>,
    /// 1 where the label is observed.
    pub mask: Tensor<2>,
    /// Number of observed entries (sum of `mask`).
    pub observed: usize,
}

/// Logits `[N, K]` of one mini-batch, their targets and optional zero-shot logits `[N, K]`.
///
/// Built with [`LossBatch::classes`] or [`LossBatch::multilabel`]; shapes and label ranges are
/// checked there (on the host, no device synchronisation), so losses only check what is specific
/// to them (e.g. `K >= 2`).
#[derive(Debug, Clone)]
pub struct LossBatch {
    logits: Tensor<2>,
    n: usize,
    k: usize,
    targets: Targets,
    zero_shot: Option<Tensor<2>>,
}

fn dims_of(logits: &Tensor<2>) -> Result<(usize, usize), TrainError> {
    let dims = logits.shape().dims::<2>();
    if dims[0] == 0 || dims[1] == 0 {
        return Err(TrainError::Shape {
            what: "logits".into(),
            expected: "[N, K] with N >= 1 and K >= 1".into(),
            got: dims.to_vec(),
        });
    }
    Ok((dims[0], dims[1]))
}

impl LossBatch {
    /// A batch with one class label per row.
    ///
    /// Errors: `targets.len() != N`, a label `>= K`, an empty logits tensor.
    pub fn classes(logits: Tensor<2>, targets: &[usize]) -> Result<Self, TrainError> {
        let (n, k) = dims_of(&logits)?;
        if targets.len() != n {
            return Err(TrainError::Shape {
                what: "targets".into(),
                expected: format!("[{n}] (one label per logits row)"),
                got: vec![targets.len()],
            });
        }
        if let Some((row, &label)) = targets.iter().enumerate().find(|(_, l)| **l >= k) {
            return Err(TrainError::TargetOutOfRange { row, label, k });
        }
        Ok(Self { logits, n, k, targets: Targets::Classes(targets.to_vec()), zero_shot: None })
    }

    /// A multilabel batch from row-major `[N, K]` raw codes as in CheXpert-style label files:
    /// `Some(1)` positive, `Some(0)` negative, `Some(-1)` uncertain and `None` / `Some(NaN)` blank.
    /// Uncertain and blank entries are masked out of the loss.
    ///
    /// Errors: `raw.len() != N*K`, any other value.
    pub fn multilabel(logits: Tensor<2>, raw: &[Option<f64>]) -> Result<Self, TrainError> {
        let (n, k) = dims_of(&logits)?;
        if raw.len() != n * k {
            return Err(TrainError::Shape {
                what: "multilabel targets".into(),
                expected: format!("{} values (N*K = {n}*{k}, row-major)", n * k),
                got: vec![raw.len()],
            });
        }
        let mut labels = Vec::with_capacity(n * k);
        let mut mask = Vec::with_capacity(n * k);
        for (idx, code) in raw.iter().enumerate() {
            let (label, observed) = match *code {
                None => (0.0, 0.0),
                Some(v) if v.is_nan() => (0.0, 0.0),
                Some(1.0) => (1.0, 1.0),
                Some(0.0) => (0.0, 1.0),
                Some(-1.0) => (0.0, 0.0),
                Some(value) => {
                    return Err(TrainError::BadMultilabelCode { row: idx / k, col: idx % k, value });
                }
            };
            labels.push(label);
            mask.push(observed);
        }
        let observed = mask.iter().filter(|m| **m > 0.0).count();
        let device = logits.device();
        let dtype = logits.dtype();
        let labels = host_tensor(labels, [n, k], &device, dtype);
        let mask = host_tensor(mask, [n, k], &device, dtype);
        let targets = Targets::Multilabel(Box::new(MultilabelTargets { labels, mask, observed }));
        Ok(Self { logits, n, k, targets, zero_shot: None })
    }

    /// Attach the frozen zero-shot logits of the same images (needed by `zs_norm` and
    /// `range_penalty`). They are detached: no gradient flows into them.
    ///
    /// Errors: a shape other than the logits' `[N, K]`.
    pub fn with_zero_shot(mut self, zero_shot: Tensor<2>) -> Result<Self, TrainError> {
        let dims = zero_shot.shape().dims::<2>();
        if dims != [self.n, self.k] {
            return Err(TrainError::Shape {
                what: "zero-shot logits".into(),
                expected: format!("[{}, {}] (same as the logits)", self.n, self.k),
                got: dims.to_vec(),
            });
        }
        self.zero_shot = Some(zero_shot.detach());
        Ok(self)
    }

    /// The logits `[N, K]`.
    pub fn logits(&self) -> &Tensor<2> {
        &self.logits
    }

    /// Batch size N.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of classes K.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The targets.
    pub fn targets(&self) -> &Targets {
        &self.targets
    }

    /// The zero-shot logits, if attached.
    pub fn zero_shot(&self) -> Option<&Tensor<2>> {
        self.zero_shot.as_ref()
    }

    /// The class labels, or `WrongTargets` naming `loss` for a multilabel batch.
    pub(crate) fn class_labels(&self, loss: &str) -> Result<&[usize], TrainError> {
        match &self.targets {
            Targets::Classes(labels) => Ok(labels),
            Targets::Multilabel(_) => {
                Err(TrainError::WrongTargets { loss: loss.into(), expected: "class-label".into() })
            }
        }
    }

    /// The zero-shot logits, or `MissingZeroShot` naming `loss`.
    pub(crate) fn zero_shot_for(&self, loss: &str) -> Result<Tensor<2>, TrainError> {
        self.zero_shot.clone().ok_or_else(|| TrainError::MissingZeroShot { loss: loss.into() })
    }

    /// Errors with `TooFewClasses` when `K < min`.
    pub(crate) fn require_classes(&self, loss: &str, min: usize) -> Result<(), TrainError> {
        if self.k < min {
            return Err(TrainError::TooFewClasses { loss: loss.into(), k: self.k, min });
        }
        Ok(())
    }

    /// One-hot `[N, K]` of the class labels, in the logits' dtype, on the logits' device.
    pub(crate) fn one_hot(&self, loss: &str) -> Result<Tensor<2>, TrainError> {
        let labels = self.class_labels(loss)?;
        let mut values = vec![0.0; self.n * self.k];
        for (row, &label) in labels.iter().enumerate() {
            values[row * self.k + label] = 1.0;
        }
        Ok(self.host([self.n, self.k], values))
    }

    /// A constant tensor made from host values, in the logits' dtype and device.
    pub(crate) fn host<const D: usize>(&self, shape: [usize; D], values: Vec<f64>) -> Tensor<D> {
        host_tensor(values, shape, &self.logits.device(), self.logits.dtype())
    }
}

/// A constant tensor of the given dtype from f64 host values.
pub(crate) fn host_tensor<const D: usize>(
    values: Vec<f64>,
    shape: [usize; D],
    device: &Device,
    dtype: DType,
) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values, shape), (device, dtype))
}

/// Reads a tensor back to the host as f64 values (row-major).
pub(crate) fn to_host<const D: usize>(tensor: &Tensor<D>) -> Vec<f64> {
    tensor.to_data().iter::<f64>().collect()
}
