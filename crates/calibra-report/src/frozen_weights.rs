//! A saved reference freezes its weights: weights asked for alongside it must equal them
//! (`calibra eval` and `calibra crs`, `--reference` with `--weights`/`--axis-weights`).

use calibra_crs::{AxisWeights, ComponentWeights, Reference};
use std::path::{Path, PathBuf};

/// Weights that differ from those the saved reference `path` froze.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: the reference freezes its weights (components {component:?}, axes {axes:?}); \
     --weights/--axis-weights differ: build a new reference instead",
    path.display()
)]
pub struct FrozenWeightsError {
    pub path: PathBuf,
    pub component: ComponentWeights,
    pub axes: Vec<f64>,
}

/// `Ok` when `weights` and `axis_weights` are absent or equal to the weights `reference` froze.
pub fn check_frozen_weights(
    path: &Path,
    reference: &Reference,
    weights: Option<ComponentWeights>,
    axis_weights: Option<AxisWeights>,
) -> Result<(), FrozenWeightsError> {
    let frozen = reference.weights();
    if weights.is_some_and(|w| w != frozen.component) || axis_weights.is_some_and(|w| w != frozen.axis) {
        return Err(FrozenWeightsError {
            path: path.to_path_buf(),
            component: frozen.component,
            axes: frozen.axis.as_slice().to_vec(),
        });
    }
    Ok(())
}
