//! Loading and saving module weights from/to Hugging Face `model.safetensors` files.

use std::collections::BTreeMap;
use std::path::Path;

use burn::store::{
    ApplyError, BurnToPyTorchAdapter, IdentityAdapter, KeyRemapper, ModuleSnapshot, ModuleStore,
    PyTorchToBurnAdapter, SafetensorsStore,
};
use regex::Regex;

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
/// Fails with [`ModelError::KeyMismatch`] listing *every* module parameter without a tensor
/// (`missing`), every file tensor nothing consumed (`unused`, by its file name) and every shape
/// mismatch; the module must then be discarded (it may be partly overwritten).
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
    let mut store =
        SafetensorsStore::from_file(path).remap(exact_remapper(&pairs)?).allow_partial(true).validate(false);
    store = match options.layout {
        WeightLayout::PyTorch => store.with_from_adapter(PyTorchToBurnAdapter),
        WeightLayout::Burn => store.with_from_adapter(IdentityAdapter),
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
    Ok(LoadSummary { applied: result.applied.len(), ignored })
}

/// Saves `module` to `path` in the Hugging Face layout: PyTorch tensor layout
/// (`BurnToPyTorchAdapter`: Linear transposed back to `[out, in]`, norms `weight`/`bias`) and
/// file names from [`KeyMap::to_hf`]; metadata `format = "pt"` as transformers expects.
/// Overwrites an existing file atomically.
pub fn save_safetensors<M: ModuleSnapshot>(module: &M, path: &Path, map: &KeyMap) -> Result<(), ModelError> {
    let names: Vec<String> = module
        .collect(None, Some(Box::new(BurnToPyTorchAdapter)), true)
        .into_iter()
        .map(|t| t.name)
        .collect();
    let pairs: BTreeMap<String, String> = names.iter().map(|n| (n.clone(), map.to_hf(n))).collect();
    let mut store = SafetensorsStore::from_file(path)
        .with_to_adapter(BurnToPyTorchAdapter)
        .skip_enum_variants(true)
        .remap(exact_remapper(&pairs)?)
        .clear_metadata()
        .metadata("format", "pt")
        .overwrite(true);
    module.save_into(&mut store).map_err(|e| store_err(path, e))
}
