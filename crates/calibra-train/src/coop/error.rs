//! The error type of CoOp training.

use std::path::PathBuf;

use calibra_models::ModelError;

use crate::error::TrainError;

/// Everything that can go wrong in [`super::train_coop`]: a bad config or input, a loss, the CLIP
/// model (prompt assembly, text tower), or the checkpoint directory.
#[derive(Debug, thiserror::Error)]
pub enum CoopError {
    /// A loss, schedule or batch error.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The prompt learner or the text tower failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A hyper-parameter or an input (features, labels, class names) out of range.
    #[error("CoOp: {0}")]
    Config(String),
    /// Reading or preprocessing the training images (MaPLe).
    #[error("reading the training images: {0}")]
    Data(String),
    /// Reading or writing a checkpoint file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A checkpoint that cannot be used.
    #[error("CoOp checkpoint {}: {why}", path.display())]
    Checkpoint {
        /// The checkpoint directory or file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}
