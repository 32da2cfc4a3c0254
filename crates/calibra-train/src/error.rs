//! The error type of calibra-train's losses, schedules and gradient clipping.

use thiserror::Error;

/// Everything that can go wrong when a loss is named, configured or evaluated, when a schedule is
/// built, or when gradients are clipped. Messages name the loss / key / row involved and what was
/// expected.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TrainError {
    /// The loss spec string is empty or malformed (e.g. `ce++mdca`, `x*ce`).
    #[error("loss spec `{spec}`: {reason}")]
    MalformedSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A loss name that is not in the registry.
    #[error("unknown loss `{name}`; known losses: {known}")]
    UnknownLoss {
        /// The name as given.
        name: String,
        /// Comma-separated registry names.
        known: String,
    },
    /// An argument that is not of the form `key=value` or `loss.key=value`.
    #[error("loss argument `{arg}`: expected `key=value` or `loss.key=value`")]
    MalformedArg {
        /// The argument as given.
        arg: String,
    },
    /// An argument key that no loss of the spec accepts.
    #[error("loss argument `{key}`: not accepted by {losses}; accepted keys: {accepted}")]
    UnknownArg {
        /// The key as given.
        key: String,
        /// The loss(es) it was offered to.
        losses: String,
        /// The keys those losses accept.
        accepted: String,
    },
    /// An unqualified key accepted by several terms of a combined loss.
    #[error("loss argument `{key}` is accepted by several terms ({losses}); qualify it, e.g. `{example}`")]
    AmbiguousArg {
        /// The key as given.
        key: String,
        /// The terms accepting it.
        losses: String,
        /// A qualified form of the key.
        example: String,
    },
    /// The same key given twice for one loss.
    #[error("loss argument `{key}` given twice for `{loss}`")]
    DuplicateArg {
        /// The loss.
        loss: String,
        /// The key.
        key: String,
    },
    /// A value that does not parse or is out of range.
    #[error("loss `{loss}`, argument `{key}` = `{value}`: expected {expected}")]
    BadValue {
        /// The loss.
        loss: String,
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// Terms of a combined loss that need different kinds of targets.
    #[error("loss spec `{spec}`: {reason}")]
    IncompatibleTerms {
        /// The spec.
        spec: String,
        /// Why the terms cannot be summed.
        reason: String,
    },
    /// A tensor with a shape other than the one required.
    #[error("{what}: expected shape {expected}, got {got:?}")]
    Shape {
        /// Which tensor.
        what: String,
        /// The expected shape, in words.
        expected: String,
        /// The actual dims.
        got: Vec<usize>,
    },
    /// A class label outside `0..K`.
    #[error("target row {row}: label {label} is outside 0..{k}")]
    TargetOutOfRange {
        /// Row index in the batch.
        row: usize,
        /// The label.
        label: usize,
        /// Number of classes.
        k: usize,
    },
    /// A multilabel entry that is not 1, 0, -1 (uncertain) or blank.
    #[error(
        "multilabel target row {row}, column {col}: value {value} (expected 1, 0, -1 = uncertain, or blank)"
    )]
    BadMultilabelCode {
        /// Row.
        row: usize,
        /// Column.
        col: usize,
        /// The value.
        value: f64,
    },
    /// A loss that needs more classes than the batch has.
    #[error("loss `{loss}` needs at least {min} classes, the logits have {k}")]
    TooFewClasses {
        /// The loss.
        loss: String,
        /// Classes in the batch.
        k: usize,
        /// Minimum required.
        min: usize,
    },
    /// A loss that needs the other kind of targets (class labels vs multilabel).
    #[error("loss `{loss}` needs {expected} targets")]
    WrongTargets {
        /// The loss.
        loss: String,
        /// "class-label" or "multilabel".
        expected: String,
    },
    /// A CLIP-style loss evaluated on a batch without zero-shot logits.
    #[error("loss `{loss}` needs the frozen zero-shot logits of the batch (LossBatch::with_zero_shot)")]
    MissingZeroShot {
        /// The loss.
        loss: String,
    },
    /// A NaN or infinite value where a finite one is required.
    #[error("{what} is not finite ({value})")]
    NonFinite {
        /// What was checked.
        what: String,
        /// The offending value.
        value: f64,
    },
    /// A schedule or clipping parameter out of range.
    #[error("{what}: {reason}")]
    BadConfig {
        /// The parameter.
        what: String,
        /// What was expected.
        reason: String,
    },
}
