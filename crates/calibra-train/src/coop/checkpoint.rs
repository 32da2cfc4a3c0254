//! Crash-safe CoOp checkpoints, in the layout of [`crate::trainer`]: `checkpoint/` holds the
//! prompt learner (`learner.bpk`, burnpack with its parameter ids), the SGD momentum (`optimizer.bpk`) and
//! `state.json` (step, config, losses). A new directory is completed and synced, then swapped in.

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::optim::ModuleOptimizer;
use serde::{Deserialize, Serialize};

use super::config::CoopConfig;
use super::error::CoopError;

/// What a checkpoint records besides the tensors.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CoopState {
    pub format: u32,
    pub step: usize,
    pub config: CoopConfig,
    pub classnames: Vec<String>,
    pub n_train: usize,
    /// NaN (a step passed over: none of its images readable) is written as `null`.
    #[serde(with = "crate::checkpoint_dir::losses_with_gaps")]
    pub losses: Vec<f64>,
    /// PromptSRC: the Gaussian prompt aggregate of the epochs done so far (flat parameter values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<Vec<f64>>,
}

impl From<crate::checkpoint_dir::CheckpointFault> for CoopError {
    fn from(f: crate::checkpoint_dir::CheckpointFault) -> Self {
        match f {
            crate::checkpoint_dir::CheckpointFault::Io { path, source } => CoopError::Io { path, source },
            crate::checkpoint_dir::CheckpointFault::Format { path, why } => {
                CoopError::Checkpoint { path, why }
            }
        }
    }
}

/// The newest complete checkpoint under `dir`.
pub(crate) fn read(dir: &Path) -> Result<Option<(CoopState, PathBuf)>, CoopError> {
    Ok(crate::checkpoint_dir::read_state(dir)?)
}

/// The learner and optimiser restored from a checkpoint with its state (`Ok`), or given back
/// unchanged when there is no checkpoint (`Err`).
pub(crate) type Resumed<M> = Result<(M, ModuleOptimizer, CoopState), (M, ModuleOptimizer)>;

/// A run's resume point: the learner and optimiser of the newest checkpoint under `dir` and its
/// state, or `None` when there is none. A checkpoint of another config, class names or training-set
/// size is an error (never silently mixed in).
pub(crate) fn resume<M: Module>(
    dir: &Path,
    config: &CoopConfig,
    classnames: &[String],
    n_train: usize,
    learner: M,
    optimizer: ModuleOptimizer,
) -> Result<Resumed<M>, CoopError> {
    let Some((state, path)) = read(dir)? else {
        return Ok(Err((learner, optimizer)));
    };
    if state.config != *config || state.n_train != n_train || state.classnames != classnames {
        return Err(CoopError::Checkpoint {
            path,
            why: "was written by a run with another config, class names or training set; remove it to \
                  start over"
                .into(),
        });
    }
    let (learner, optimizer) = load(&path, learner, optimizer)?;
    Ok(Ok((learner, optimizer, state)))
}

/// Loads the prompt learner (CoOp's context, MaPLe's prompts and couplings) and the optimiser state
/// of checkpoint directory `path`.
fn load<M: Module>(
    path: &Path,
    learner: M,
    optimizer: ModuleOptimizer,
) -> Result<(M, ModuleOptimizer), CoopError> {
    let ck = |why: String| CoopError::Checkpoint { path: path.to_path_buf(), why };
    let learner =
        learner.try_load_file(path.join("learner.bpk")).map_err(|e| ck(format!("learner.bpk: {e}")))?;
    let optimizer =
        optimizer.load(path.join("optimizer.bpk")).map_err(|e| ck(format!("optimizer.bpk: {e}")))?;
    Ok((learner, optimizer))
}

/// Writes `checkpoint/` under `dir` atomically (see [`crate::checkpoint_dir`]).
pub(crate) fn write<M: Module + Clone>(
    dir: &Path,
    learner: &M,
    optimizer: &ModuleOptimizer,
    state: &CoopState,
) -> Result<(), CoopError> {
    Ok(crate::checkpoint_dir::write(dir, &[("learner.bpk", learner)], optimizer, state)?)
}
