//! Crash-safe CoOp checkpoints, in the layout of [`crate::trainer`]: `checkpoint/` holds the
//! context (`learner.bpk`, burnpack with its parameter id), the SGD momentum (`optimizer.bpk`) and
//! `state.json` (step, config, losses). A new directory is completed and synced, then swapped in.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::optim::ModuleOptimizer;
use calibra_models::clip::PromptLearner;
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
    pub losses: Vec<f64>,
}

const CHECKPOINT: &str = "checkpoint";
const CHECKPOINT_OLD: &str = "checkpoint.old";

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CoopError + '_ {
    move |source| CoopError::Io { path: path.to_path_buf(), source }
}

/// The newest complete checkpoint under `dir` (`checkpoint/`, or `checkpoint.old/` after a crash
/// between the two renames of [`write`]).
pub(crate) fn read(dir: &Path) -> Result<Option<(CoopState, PathBuf)>, CoopError> {
    for name in [CHECKPOINT, CHECKPOINT_OLD] {
        let path = dir.join(name);
        let state_path = path.join("state.json");
        if state_path.exists() {
            let text = fs::read_to_string(&state_path).map_err(io_err(&state_path))?;
            let state: CoopState = serde_json::from_str(&text)
                .map_err(|e| CoopError::Checkpoint { path: state_path.clone(), why: e.to_string() })?;
            return Ok(Some((state, path)));
        }
    }
    Ok(None)
}

/// Loads the context and the optimiser state of checkpoint directory `path`.
pub(crate) fn load(
    path: &Path,
    learner: PromptLearner,
    optimizer: ModuleOptimizer,
) -> Result<(PromptLearner, ModuleOptimizer), CoopError> {
    let ck = |why: String| CoopError::Checkpoint { path: path.to_path_buf(), why };
    let learner =
        learner.try_load_file(path.join("learner.bpk")).map_err(|e| ck(format!("learner.bpk: {e}")))?;
    let optimizer =
        optimizer.load(path.join("optimizer.bpk")).map_err(|e| ck(format!("optimizer.bpk: {e}")))?;
    Ok((learner, optimizer))
}

/// Writes `checkpoint/` under `dir` atomically (see the module docs).
pub(crate) fn write(
    dir: &Path,
    learner: &PromptLearner,
    optimizer: &ModuleOptimizer,
    state: &CoopState,
) -> Result<(), CoopError> {
    let tmp = dir.join(format!("checkpoint.tmp-{}", std::process::id()));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(io_err(&tmp))?;
    }
    fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
    let ck = |why: String| CoopError::Checkpoint { path: tmp.clone(), why };
    learner.clone().save_file(tmp.join("learner.bpk")).map_err(|e| ck(format!("learner.bpk: {e}")))?;
    optimizer.save(tmp.join("optimizer.bpk")).map_err(|e| ck(format!("optimizer.bpk: {e}")))?;
    let state_path = tmp.join("state.json");
    let mut f = fs::File::create(&state_path).map_err(io_err(&state_path))?;
    let json = serde_json::to_string(state).map_err(|e| ck(format!("state.json: {e}")))?;
    f.write_all(json.as_bytes()).map_err(io_err(&state_path))?;
    f.sync_all().map_err(io_err(&state_path))?;
    for file in ["learner.bpk", "optimizer.bpk"] {
        let p = tmp.join(file);
        fs::File::open(&p).and_then(|f| f.sync_all()).map_err(io_err(&p))?;
    }
    let current = dir.join(CHECKPOINT);
    let old = dir.join(CHECKPOINT_OLD);
    if old.exists() {
        fs::remove_dir_all(&old).map_err(io_err(&old))?;
    }
    if current.exists() {
        fs::rename(&current, &old).map_err(io_err(&current))?;
    }
    fs::rename(&tmp, &current).map_err(io_err(&tmp))?;
    if old.exists() {
        fs::remove_dir_all(&old).map_err(io_err(&old))?;
    }
    Ok(())
}
