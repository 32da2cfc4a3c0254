//! A PyTorch pickle checkpoint (`torch.save` of a state dict, `.pt`/`.pth`, ZIP or legacy container)
//! opened as a flat list of named tensors, for the `calibra convert` commands that turn released
//! research checkpoints into layouts calibra loads.
//!
//! Released checkpoints nest their weights in different ways: at the top level, under a training
//! script's `state_dict` or `model` entry (next to `optimizer`, `epoch`, `args`, …), with a `module.`
//! prefix on every name (a DDP save). [`TorchStateDict::open`] finds the weights (an entry the user
//! names, else the top level, else the first nested entry that exists), and strips `module.`.
//! burn's `pytorch-reader` reads the file; Python objects it does not interpret (an
//! `argparse.Namespace` of training arguments) are skipped, never executed. TorchScript archives are
//! refused with the Python line that re-saves their weights.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pytorch_reader::{DType, PytorchReader, Tensor};
use safetensors::Dtype;

use crate::clip::open_clip::convert::Owned;
use crate::error::ModelError;
use crate::hf::file_sha256::{file_sha256, hex};

/// A tensor's stored type and shape, by name (prefix stripped).
pub type Shapes = BTreeMap<String, (DType, Vec<usize>)>;

/// A checkpoint error naming the file.
pub fn invalid(path: &Path, message: impl Into<String>) -> ModelError {
    ModelError::Checkpoint { path: path.into(), message: message.into() }
}

/// Whether `path` is a ZIP archive holding TorchScript code (`*/code/…`, `*/constants.pkl`).
pub fn is_torchscript(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return false };
    let Ok(archive) = zip::ZipArchive::new(file) else { return false };
    archive.file_names().flatten().any(|n| n.ends_with("/constants.pkl") || n.contains("/code/"))
}

/// The safetensors type of a stored PyTorch type (`None`: bool, complex or quantised).
pub fn safetensors_dtype(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::I64 => Dtype::I64,
        DType::I32 => Dtype::I32,
        DType::I16 => Dtype::I16,
        DType::I8 => Dtype::I8,
        DType::U8 => Dtype::U8,
        _ => return None,
    })
}

/// Whether a stored type is a floating-point one.
pub fn is_float(dtype: DType) -> bool {
    matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
}

/// `message` cut to its first 400 characters (the reader's errors can list every key of a file).
fn shortened(message: &str) -> String {
    match message.char_indices().nth(400) {
        Some((end, _)) => format!("{} …", &message[..end]),
        None => message.to_string(),
    }
}

/// `names` sorted, the first eight joined by commas, then `, …` when there are more: for errors that
/// list what a checkpoint should not hold.
pub fn name_sample(names: &mut [String]) -> String {
    names.sort();
    let shown: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
    format!("{}{}", shown.join(", "), if names.len() > shown.len() { ", …" } else { "" })
}

/// The shape of `tensor` (the one named `name`), which must exist with `rank` axes; `what` names the
/// expected checkpoint in the error.
pub fn required_shape(
    tensor: Option<&Tensor>,
    path: &Path,
    name: &str,
    rank: usize,
    what: &str,
) -> Result<Vec<usize>, ModelError> {
    let tensor = tensor.ok_or_else(|| {
        invalid(path, format!("missing '{name}': not {what} (or nested under another entry: pass --key)"))
    })?;
    if tensor.shape().len() != rank {
        return Err(invalid(path, format!("'{name}' has shape {:?}, expected {rank} axes", tensor.shape())));
    }
    Ok(tensor.shape().to_vec())
}

/// The bytes of `tensor` (the one named `name`) in its stored type, as a tensor to write.
pub(crate) fn owned_tensor(tensor: &Tensor, name: &str, path: &Path) -> Result<Owned, ModelError> {
    let dtype = safetensors_dtype(tensor.dtype()).ok_or_else(|| {
        invalid(path, format!("'{name}' is a {:?} tensor, which cannot be converted", tensor.dtype()))
    })?;
    let data = tensor.read().map_err(|e| invalid(path, format!("reading '{name}': {e}")))?;
    Ok(Owned { dtype, shape: tensor.shape().to_vec(), data })
}

/// [`owned_tensor`] for a weight, which must be floating point.
pub(crate) fn float_tensor(tensor: &Tensor, name: &str, path: &Path) -> Result<Owned, ModelError> {
    if !is_float(tensor.dtype()) {
        return Err(invalid(
            path,
            format!("'{name}' is a {:?} tensor, expected floating point", tensor.dtype()),
        ));
    }
    owned_tensor(tensor, name, path)
}

/// Where a conversion's weights came from, as `calibra convert` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceCheckpoint {
    /// The entry the weights were read from (`model`, `state_dict`, …), if not the top level.
    pub entry: Option<String>,
    /// The prefix taken off every name (`module.` for a DDP save), if any.
    pub stripped_prefix: Option<String>,
    /// SHA-256 of the file, hex.
    pub sha256: String,
}

/// The weights of a PyTorch checkpoint file, found and unwrapped.
pub struct TorchStateDict {
    path: PathBuf,
    reader: PytorchReader,
    /// The entry the weights were read from (`model`, `state_dict`, …), if not the top level.
    pub entry: Option<String>,
    /// `module.` when every name carried it (a DDP save), else empty.
    pub strip: &'static str,
}

impl TorchStateDict {
    /// Opens `path`: at `key` when given; else at the top level when `top_level_ok` accepts its
    /// names; else at the first entry of `nested` the file has. `what` names the expected content
    /// in errors ("an OpenAI CLIP state dict").
    pub fn open(
        path: &Path,
        key: Option<&str>,
        nested: &[&str],
        top_level_ok: impl Fn(&[String]) -> bool,
        what: &str,
    ) -> Result<Self, ModelError> {
        let read = |key: Option<&str>| match key {
            Some(k) => PytorchReader::with_top_level_key(path, k),
            None => PytorchReader::new(path),
        };
        let mut reader = read(key).map_err(|e| {
            if is_torchscript(path) {
                invalid(
                    path,
                    format!(
                        "a TorchScript archive, not {what}; re-save its weights in Python: \
                         torch.save(torch.jit.load(path, map_location='cpu').state_dict(), 'state_dict.pt')"
                    ),
                )
            } else {
                let e = shortened(&e.to_string());
                match key {
                    Some(k) => {
                        invalid(path, format!("cannot read the entry '{k}' as a PyTorch state dict: {e}"))
                    }
                    None => invalid(path, format!("not a readable PyTorch checkpoint: {e}")),
                }
            }
        })?;
        let mut entry = key.map(str::to_string);
        if key.is_none() {
            let names = reader.keys();
            let unwrapped: Vec<String> =
                names.iter().map(|n| n.strip_prefix("module.").unwrap_or(n).to_string()).collect();
            if !top_level_ok(&unwrapped) {
                // The first candidate entry that reads as a nested state dict (a flat name such as
                // `teacher.blocks.0.…` is not one: the reader refuses it, and the top level stays).
                let found = nested
                    .iter()
                    .filter(|k| names.iter().any(|n| n.starts_with(&format!("{k}."))))
                    .find_map(|k| read(Some(k)).ok().map(|r| (k, r)));
                if let Some((k, nested_reader)) = found {
                    reader = nested_reader;
                    entry = Some(k.to_string());
                }
            }
        }
        let names = reader.keys();
        let strip =
            if !names.is_empty() && names.iter().all(|n| n.starts_with("module.")) { "module." } else { "" };
        Ok(Self { path: path.into(), reader, entry, strip })
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The names (prefix stripped) with their stored types and shapes.
    pub fn shapes(&self) -> Shapes {
        self.iter().map(|(name, t)| (name.to_string(), (t.dtype(), t.shape().to_vec()))).collect()
    }

    /// `(name with the prefix stripped, tensor)`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.reader.tensors().iter().map(|(n, t)| (n.strip_prefix(self.strip).unwrap_or(n), t))
    }

    /// The tensor stored as `name` (prefix stripped).
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.reader.get(&format!("{}{name}", self.strip))
    }

    /// The shape of `name` (prefix stripped): see [`required_shape`].
    pub fn required(&self, name: &str, rank: usize, what: &str) -> Result<Vec<usize>, ModelError> {
        required_shape(self.get(name), &self.path, name, rank, what)
    }

    /// Where the weights came from: the entry, the stripped prefix, the file's SHA-256.
    pub fn source(&self) -> Result<SourceCheckpoint, ModelError> {
        Ok(SourceCheckpoint {
            entry: self.entry.clone(),
            stripped_prefix: (!self.strip.is_empty()).then(|| self.strip.to_string()),
            sha256: hex(&file_sha256(&self.path)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_types_map_to_safetensors() {
        assert_eq!(safetensors_dtype(DType::F16), Some(Dtype::F16));
        assert_eq!(safetensors_dtype(DType::I64), Some(Dtype::I64));
        assert!(is_float(DType::BF16) && !is_float(DType::I64));
    }

    #[test]
    fn name_samples_are_sorted_and_cut_at_eight() {
        let mut few = vec!["b".to_string(), "a".to_string()];
        assert_eq!(name_sample(&mut few), "a, b");
        let mut many: Vec<String> = (0..10).rev().map(|i| format!("n{i}")).collect();
        assert_eq!(name_sample(&mut many), "n0, n1, n2, n3, n4, n5, n6, n7, …");
    }

    #[test]
    fn long_reader_errors_are_shortened() {
        assert_eq!(shortened("short"), "short");
        let long = "é".repeat(1000);
        let cut = shortened(&long);
        assert_eq!(cut.chars().count(), 402);
        assert!(cut.ends_with(" …"));
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = TorchStateDict::open(Path::new("/nonexistent/ck.pth"), None, &[], |_| true, "x")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("/nonexistent/ck.pth"), "{e}");
    }
}
