//! Crash-safe checkpoint directories, shared by the image trainer and the CoOp trainer.
//!
//! `checkpoint/` under a run's directory holds the trained module (`<name>.bpk`, burnpack with its
//! parameter ids), the optimiser state (`optimizer.bpk`) and `state.json` (whatever the trainer
//! needs to continue: step, config, losses). A new directory `.checkpoint.tmp-<pid>` is completed and
//! synced, then swapped in by two renames (`checkpoint` → `checkpoint.old`, tmp → `checkpoint`;
//! `calibra_core::DirSwap`); a crash between them leaves `checkpoint.old`, which [`read_state`] falls
//! back to.

use std::fs;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::optim::ModuleOptimizer;
use serde::Serialize;
use serde::de::DeserializeOwned;

const CHECKPOINT: &str = "checkpoint";
const CHECKPOINT_OLD: &str = "checkpoint.old";

/// What went wrong, at which path.
#[derive(Debug)]
pub(crate) enum CheckpointFault {
    Io { path: PathBuf, source: std::io::Error },
    Format { path: PathBuf, why: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointFault + '_ {
    move |source| CheckpointFault::Io { path: path.to_path_buf(), source }
}

/// Whether a checkpoint is written after step `done` of `total`: at the end, and every `every` steps
/// (0: only at the end).
pub(crate) fn due(done: usize, total: usize, every: usize) -> bool {
    done == total || (every > 0 && done.is_multiple_of(every))
}

/// The newest complete checkpoint under `dir`: its `state.json` and its directory.
pub(crate) fn read_state<S: DeserializeOwned>(dir: &Path) -> Result<Option<(S, PathBuf)>, CheckpointFault> {
    for name in [CHECKPOINT, CHECKPOINT_OLD] {
        let path = dir.join(name);
        let state_path = path.join("state.json");
        if state_path.exists() {
            let text = fs::read_to_string(&state_path).map_err(io(&state_path))?;
            let state = serde_json::from_str(&text)
                .map_err(|e| CheckpointFault::Format { path: state_path.clone(), why: e.to_string() })?;
            return Ok(Some((state, path)));
        }
    }
    Ok(None)
}

/// Write each `(file, module)` of `modules`, `optimizer` and `state` into a fresh `checkpoint/`
/// under `dir`.
pub(crate) fn write<M: Module + Clone, S: Serialize>(
    dir: &Path,
    modules: &[(&str, &M)],
    optimizer: &ModuleOptimizer,
    state: &S,
) -> Result<(), CheckpointFault> {
    let current = dir.join(CHECKPOINT);
    let swap =
        calibra_core::DirSwap::beside(&current).map_err(io(&current))?.with_aside(dir.join(CHECKPOINT_OLD));
    swap.write(|tmp| -> Result<(), CheckpointFault> {
        let fault = |file: &str, why: String| CheckpointFault::Format { path: tmp.join(file), why };
        for (file, module) in modules {
            (*module).clone().save_file(tmp.join(file)).map_err(|e| fault(file, e.to_string()))?;
        }
        optimizer.save(tmp.join("optimizer.bpk")).map_err(|e| fault("optimizer.bpk", e.to_string()))?;
        let state_path = tmp.join("state.json");
        let json = serde_json::to_string(state).map_err(|e| fault("state.json", e.to_string()))?;
        fs::write(&state_path, json).map_err(io(&state_path))
    })
    .map_err(|e| e.into_error(|path, source| CheckpointFault::Io { path, source }))
}

/// Serde for a checkpoint's per-step losses where NaN marks a step passed over: JSON has no NaN, so
/// it is written as `null` and read back as NaN (files without gaps read as before).
pub(crate) mod losses_with_gaps {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(losses: &[f64], s: S) -> Result<S::Ok, S::Error> {
        losses.iter().map(|&l| (!l.is_nan()).then_some(l)).collect::<Vec<Option<f64>>>().serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<Option<f64>>::deserialize(d)?.into_iter().map(|l| l.unwrap_or(f64::NAN)).collect())
    }

    #[cfg(test)]
    mod tests {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Losses(#[serde(with = "super")] Vec<f64>);

        #[test]
        fn a_gap_round_trips_as_null() {
            let text = serde_json::to_string(&Losses(vec![0.5, f64::NAN, 0.25])).unwrap();
            assert_eq!(text, "[0.5,null,0.25]");
            let back: Losses = serde_json::from_str(&text).unwrap();
            assert_eq!(back.0[0], 0.5);
            assert!(back.0[1].is_nan());
            let old: Losses = serde_json::from_str("[1.0,2.0]").unwrap();
            assert_eq!(old.0, vec![1.0, 2.0]);
        }
    }
}
