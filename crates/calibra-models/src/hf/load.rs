//! Loading and saving module weights from/to Hugging Face `model.safetensors` files.
//!
//! On load every float tensor is converted to the compute dtype, f32 (burn-store keeps a tensor's
//! stored dtype, and an F16 parameter among F32 ones would panic in the first matmul): F16 and BF16
//! convert exactly (every half value is an f32 value); F64 rounds to the nearest f32 (what
//! `torch.Tensor.float()` does). Every loaded value is then checked to be finite: a NaN or ±inf
//! weight is an error naming the tensor, never a model that computes wrong numbers.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use burn::store::burn_pack::Tensor as PackTensor;
use burn::store::{
    ApplyError, BurnToPyTorchAdapter, FloatCastAdapter, IdentityAdapter, KeyRemapper, ModuleAdapter,
    ModuleContext, ModuleSnapshot, ModuleStore, PyTorchToBurnAdapter, SafetensorsStore, bridge,
};
use burn::tensor::DType;
use regex::Regex;

use super::config::HfConfig;
use super::keymap::KeyMap;
use crate::error::{KeyReport, ModelError, ShapeMismatch};

/// Layout of the weights in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightLayout {
    /// PyTorch layout (Linear weights `[out, in]`, norms named `weight`/`bias`): loaded through
    /// burn-store's `PyTorchToBurnAdapter`, which transposes Linear weights. Every Hugging Face
    /// checkpoint is in this layout.
    #[default]
    PyTorch,
    /// Burn's own layout (Linear `[in, out]`, norms `gamma`/`beta`), loaded as is. Loading a
    /// PyTorch file this way silently loads *square* Linear weights untransposed; the parity
    /// tests show that this changes the outputs.
    Burn,
}

/// Options of [`load_safetensors`].
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Weight layout of the file.
    pub layout: WeightLayout,
}

/// What a successful load did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadSummary {
    /// Number of module tensors written from the file.
    pub applied: usize,
    /// File keys skipped because the family's ignore list covers them.
    pub ignored: Vec<String>,
}

/// The last adapter of the load chain: records every float tensor holding a non-finite value, by
/// module path (the check runs when burn-store draws the tensor's bytes, after the f32 cast).
#[derive(Debug, Clone, Default)]
struct FiniteCheck {
    /// Module path → what is wrong.
    found: Arc<Mutex<BTreeMap<String, String>>>,
}

impl ModuleAdapter for FiniteCheck {
    fn adapt(&self, tensor: PackTensor, _ctx: ModuleContext<'_>) -> PackTensor {
        if tensor.dtype != DType::F32 {
            // Not a float (burn-store reports a non-float tensor for a float parameter itself).
            return tensor;
        }
        let (name, shape, found) = (tensor.name.clone(), tensor.shape.clone(), self.found.clone());
        let label = name.clone();
        bridge::map_data(tensor, name, DType::F32, shape, move |data| {
            let total = data.num_elements();
            let (count, first) = {
                let mut bad = data.iter::<f32>().filter(|v| !v.is_finite());
                let first = bad.next();
                (first.map_or(0, |_| 1 + bad.count()), first)
            };
            if let Some(first) = first {
                let what = format!("{count} of {total} values are not finite (first: {first})");
                found.lock().unwrap_or_else(|e| e.into_inner()).insert(label.clone(), what);
            }
            data
        })
    }

    fn clone_box(&self) -> Box<dyn ModuleAdapter> {
        Box::new(self.clone())
    }
}

/// A lower bound on the weights of `n_layers` transformer blocks of width `d` and MLP width
/// `d_hidden` (q/k/v/o projections and the two MLP matrices; biases and norms not counted).
pub fn blocks_min_weights(n_layers: usize, d: usize, d_hidden: usize) -> u128 {
    let (l, d, h) = (n_layers as u128, d as u128, d_hidden as u128);
    l * (4 * d * d + 2 * d * h)
}

/// Refuses a config that describes a model with more weights (`min_weights`, a lower bound) than the
/// weights file has bytes (no stored dtype takes less than a byte a value), before any tensor is
/// allocated: a mistyped `hidden_size` or `num_hidden_layers` would otherwise ask for memory the
/// machine does not have (an abort, not an error). A missing file is left to the loader to report.
pub fn check_fits_file(config: &HfConfig, weights: &Path, min_weights: u128) -> Result<(), ModelError> {
    let Ok(meta) = std::fs::metadata(weights) else { return Ok(()) };
    if min_weights > u128::from(meta.len()) {
        return Err(config.invalid(format!(
            "it describes a model of at least {min_weights} weights, but {} holds only {} bytes \
             (check hidden_size, num_hidden_layers, intermediate_size, image_size and patch_size)",
            weights.display(),
            meta.len()
        )));
    }
    Ok(())
}

fn store_err(path: &Path, e: impl std::fmt::Display) -> ModelError {
    ModelError::Store { path: path.into(), message: e.to_string() }
}

fn exact_remapper(pairs: &BTreeMap<String, String>) -> Result<KeyRemapper, ModelError> {
    let compiled = pairs
        .iter()
        .filter(|(from, to)| from != to)
        .map(|(from, to)| {
            let pattern = format!("^{}$", regex::escape(from));
            Regex::new(&pattern)
                .map(|re| (re, to.replace('$', "$$")))
                .map_err(|e| ModelError::RemapPattern { pattern, message: e.to_string() })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(KeyRemapper::from_compiled_patterns(compiled))
}

/// Loads `path` into `module` using the key table `map`.
///
/// Every file key is mapped with [`KeyMap::to_burn`] (an exact per-key regex pair handed to
/// burn-store's `KeyRemapper`), keys on the ignore list are dropped, and the rest is applied
/// through `SafetensorsStore` (with `PyTorchToBurnAdapter` for [`WeightLayout::PyTorch`]).
///
/// Float tensors of any float dtype (F16, BF16, F32, F64, mixed) are converted to f32 (see the
/// module docs).
///
/// Fails with [`ModelError::KeyMismatch`] listing *every* module parameter without a tensor
/// (`missing`), every file tensor nothing consumed (`unused`, by its file name) and every shape
/// mismatch, and with [`ModelError::NonFiniteWeights`] naming every tensor (by its file name) that
/// holds a NaN or infinite value; the module must then be discarded (it may be partly overwritten).
pub fn load_safetensors<M: ModuleSnapshot>(
    module: &mut M,
    path: &Path,
    map: &KeyMap,
    options: &LoadOptions,
) -> Result<LoadSummary, ModelError> {
    if !path.is_file() {
        return Err(ModelError::Io {
            path: path.into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "weights file not found"),
        });
    }
    let file_keys = SafetensorsStore::from_file(path).keys().map_err(|e| store_err(path, e))?;
    load_from_store(module, SafetensorsStore::from_file(path), file_keys, path, map, options)
}

/// [`load_safetensors`] on an in-memory safetensors file (`bytes`, e.g. a checkpoint rewritten at
/// load); `path` names the file it came from in every message.
pub fn load_safetensors_bytes<M: ModuleSnapshot>(
    module: &mut M,
    bytes: Vec<u8>,
    path: &Path,
    map: &KeyMap,
    options: &LoadOptions,
) -> Result<LoadSummary, ModelError> {
    let file_keys: Vec<String> = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| store_err(path, e))?
        .names()
        .into_iter()
        .map(str::to_string)
        .collect();
    load_from_store(module, SafetensorsStore::from_bytes(Some(bytes)), file_keys, path, map, options)
}

fn load_from_store<M: ModuleSnapshot>(
    module: &mut M,
    store: SafetensorsStore,
    file_keys: Vec<String>,
    path: &Path,
    map: &KeyMap,
    options: &LoadOptions,
) -> Result<LoadSummary, ModelError> {
    let mut ignored = Vec::new();
    let mut pairs = BTreeMap::new();
    let mut back = BTreeMap::new(); // module path -> file key
    for key in &file_keys {
        if map.is_ignored(key) {
            ignored.push(key.clone());
            // Renamed out of the module's namespace; removed from `unused` below.
            pairs.insert(key.clone(), format!("__ignored__.{key}"));
            continue;
        }
        let target = map.to_burn(key);
        back.insert(target.clone(), key.clone());
        pairs.insert(key.clone(), target);
    }
    let mut store = store.remap(exact_remapper(&pairs)?).allow_partial(true).validate(false);
    let check = FiniteCheck::default();
    let to_f32 = FloatCastAdapter::to(DType::F32);
    store = match options.layout {
        WeightLayout::PyTorch => {
            store.with_from_adapter(PyTorchToBurnAdapter.chain(to_f32).chain(check.clone()))
        }
        WeightLayout::Burn => store.with_from_adapter(IdentityAdapter.chain(to_f32).chain(check.clone())),
    };
    let result = module.load_from(&mut store).map_err(|e| store_err(path, e))?;

    let mut report = KeyReport::default();
    for (missing, _container) in &result.missing {
        let file_name = map.to_hf(missing).replace(".gamma", ".weight").replace(".beta", ".bias");
        report.missing.push(format!("{missing} (expected file key '{file_name}')"));
    }
    for unused in &result.unused {
        if unused.starts_with("__ignored__.") {
            continue;
        }
        // Norm parameters are looked up under their PyTorch names, so an unused `x.weight` may
        // appear as such; report the file's own name.
        let name = back.get(unused).cloned().unwrap_or_else(|| unused.clone());
        report.unused.push(format!("{name} (module path '{unused}')"));
    }
    for e in &result.errors {
        match e {
            ApplyError::ShapeMismatch { path: p, expected, found } => report.mis_shaped.push(ShapeMismatch {
                key: back.get(p).map(|f| format!("{p} (file key '{f}')")).unwrap_or_else(|| p.clone()),
                expected: expected.to_vec(),
                found: found.to_vec(),
            }),
            other => report.other.push(other.to_string()),
        }
    }
    report.missing.sort();
    report.unused.sort();
    if !report.is_clean() {
        return Err(ModelError::KeyMismatch {
            path: path.into(),
            family: map.family().to_string(),
            report: Box::new(report),
        });
    }
    let non_finite = std::mem::take(&mut *check.found.lock().unwrap_or_else(|e| e.into_inner()));
    if !non_finite.is_empty() {
        let mut tensors: Vec<String> = non_finite
            .into_iter()
            .map(|(module_path, what)| {
                // Norm parameters reach the adapter under burn's names (`gamma` / `beta`).
                let pytorch_name = module_path.replace(".gamma", ".weight").replace(".beta", ".bias");
                let file_key = back.get(&module_path).or_else(|| back.get(&pytorch_name)).cloned();
                let file_key = file_key.unwrap_or(module_path);
                format!("tensor '{file_key}': {what}")
            })
            .collect();
        tensors.sort();
        return Err(ModelError::NonFiniteWeights { path: path.into(), tensors });
    }
    Ok(LoadSummary { applied: result.applied.len(), ignored })
}

/// A store that writes `module` in the Hugging Face layout: PyTorch tensor layout
/// (`BurnToPyTorchAdapter`: Linear transposed back to `[out, in]`, norms `weight`/`bias`), file names
/// from [`KeyMap::to_hf`], metadata `format = "pt"` as transformers expects.
fn hf_layout_store<M: ModuleSnapshot>(
    module: &M,
    store: SafetensorsStore,
    map: &KeyMap,
) -> Result<SafetensorsStore, ModelError> {
    let names: Vec<String> = module
        .collect(None, Some(Box::new(BurnToPyTorchAdapter)), true)
        .into_iter()
        .map(|t| t.name)
        .collect();
    let pairs: BTreeMap<String, String> = names.iter().map(|n| (n.clone(), map.to_hf(n))).collect();
    Ok(store
        .with_to_adapter(BurnToPyTorchAdapter)
        .skip_enum_variants(true)
        .remap(exact_remapper(&pairs)?)
        .clear_metadata()
        .metadata("format", "pt"))
}

/// Saves `module` to `path` in the Hugging Face layout ([`hf_layout_store`]). Overwrites an
/// existing file atomically.
pub fn save_safetensors<M: ModuleSnapshot>(module: &M, path: &Path, map: &KeyMap) -> Result<(), ModelError> {
    let mut store = hf_layout_store(module, SafetensorsStore::from_file(path), map)?.overwrite(true);
    module.save_into(&mut store).map_err(|e| store_err(path, e))
}

/// The bytes [`save_safetensors`] would write, in memory (for a caller that rewrites them; `path`
/// names the destination in errors).
pub fn save_safetensors_bytes<M: ModuleSnapshot>(
    module: &M,
    map: &KeyMap,
    path: &Path,
) -> Result<Vec<u8>, ModelError> {
    let mut store = hf_layout_store(module, SafetensorsStore::from_bytes(None), map)?;
    module.save_into(&mut store).map_err(|e| store_err(path, e))?;
    store.get_bytes().map_err(|e| store_err(path, e))
}
