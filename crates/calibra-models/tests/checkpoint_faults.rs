//! Issue 20, checkpoints: half / double precision storage, non-finite weights and configs that a
//! forward pass cannot run with are handled at load time — converted exactly, or refused with an
//! error naming the tensor or the config key — never a panic or a model computing wrong numbers.
//!
//! The fixtures are the committed tiny transformers checkpoints (`scripts/golden/encoders.py`,
//! `scripts/golden/clip.py`, `scripts/golden/siglip.py`), rewritten here in other dtypes / with one
//! value or field changed.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use burn::prelude::*;
// The `half` crate's types, as burn re-exports them (a direct `half` dependency would change the
// workspace's feature resolution and rebuild the whole burn stack).
use burn::tensor::{bf16, f16};
use calibra_models::clip::ClipModel;
use calibra_models::encoder::Encoder;
use calibra_models::error::ModelError;
use safetensors::Dtype;
use serde_json::Value;

fn fixture(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(family)
}

/// A copy of a fixture's `config.json` and `model.safetensors` in a temporary directory.
fn copy_fixture(family: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::fs::copy(fixture(family).join(file), dir.path().join(file)).unwrap();
    }
    dir
}

/// One tensor to serialise: any dtype, raw little-endian bytes.
struct Raw {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl safetensors::View for Raw {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The f32 tensors of a (float32) safetensors file, in file order: (name, shape, values).
fn read_f32(path: &Path) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Vec<_> = st
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            assert_eq!(view.dtype(), Dtype::F32, "{name}");
            let values =
                view.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
            (name, view.shape().to_vec(), values)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// How one tensor is stored.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Store {
    F32,
    F16,
    Bf16,
    F64,
}

impl Store {
    /// The value the file holds for `v` (what the model must compute with), and its bytes.
    fn encode(self, values: &[f32]) -> (Dtype, Vec<u8>, Vec<f32>) {
        match self {
            Store::F32 => {
                (Dtype::F32, values.iter().flat_map(|v| v.to_le_bytes()).collect(), values.to_vec())
            }
            Store::F16 => {
                let h: Vec<f16> = values.iter().map(|&v| f16::from_f32(v)).collect();
                (
                    Dtype::F16,
                    h.iter().flat_map(|v| v.to_le_bytes()).collect(),
                    h.iter().map(|v| v.to_f32()).collect(),
                )
            }
            Store::Bf16 => {
                let h: Vec<bf16> = values.iter().map(|&v| bf16::from_f32(v)).collect();
                (
                    Dtype::BF16,
                    h.iter().flat_map(|v| v.to_le_bytes()).collect(),
                    h.iter().map(|v| v.to_f32()).collect(),
                )
            }
            // f32 -> f64 is exact, so the model must compute with the original values.
            Store::F64 => (
                Dtype::F64,
                values.iter().flat_map(|&v| f64::from(v).to_le_bytes()).collect(),
                values.to_vec(),
            ),
        }
    }
}

/// Writes `tensors` to `path`, each stored as `how(name)`, after `edit(name, values)`; returns the
/// values the file represents (as f32), in the same layout, for a float32 reference.
fn write_as(
    path: &Path,
    tensors: &[(String, Vec<usize>, Vec<f32>)],
    how: impl Fn(&str) -> Store,
) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut raw = Vec::new();
    let mut represented = Vec::new();
    for (name, shape, values) in tensors {
        let (dtype, bytes, as_f32) = how(name).encode(values);
        raw.push((name.clone(), Raw { dtype, shape: shape.clone(), bytes }));
        represented.push((name.clone(), shape.clone(), as_f32));
    }
    let metadata = std::collections::HashMap::from([("format".to_string(), "pt".to_string())]);
    std::fs::write(path, safetensors::serialize(raw, Some(metadata)).unwrap()).unwrap();
    represented
}

fn images(size: usize, device: &Device) -> Tensor<4> {
    let n = 2 * 3 * size * size;
    let pixels: Vec<f32> = (0..n).map(|i| ((i * 7919 % 97) as f32 / 48.0) - 1.0).collect();
    Tensor::from_data(TensorData::new(pixels, [2, 3, size, size]), device)
}

fn embed(dir: &Path, device: &Device) -> Vec<f32> {
    let encoder = Encoder::load_dir(dir, device).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    encoder.embed(images(30, device)).unwrap().into_data().try_to_vec::<f32>().unwrap()
}

/// The one tensor stored as fp16 among f32 ones.
const ONE_HALF: &str = "encoder.layer.1.attention.attention.query.weight";

/// Defect 2: fp16, bf16 and f64 checkpoints, and one fp16 tensor among f32 ones, load (they
/// panicked with a burn-flex dtype mismatch) and give bit-for-bit the features of a float32
/// checkpoint holding the same values.
#[test]
fn half_and_double_precision_checkpoints_give_the_float32_features() {
    let device = Device::flex();
    let original = read_f32(&fixture("vit").join("model.safetensors"));
    assert!(original.iter().any(|t| t.0 == ONE_HALF));
    type StoreOf = fn(&str) -> Store;
    let cases: [(&str, StoreOf); 4] = [
        ("fp16", |_| Store::F16),
        ("bf16", |_| Store::Bf16),
        ("f64", |_| Store::F64),
        ("one fp16 tensor", |n| if n == ONE_HALF { Store::F16 } else { Store::F32 }),
    ];
    for (what, how) in cases {
        let stored = copy_fixture("vit");
        let represented = write_as(&stored.path().join("model.safetensors"), &original, how);
        let reference = copy_fixture("vit");
        write_as(&reference.path().join("model.safetensors"), &represented, |_| Store::F32);
        let got = embed(stored.path(), &device);
        let want = embed(reference.path(), &device);
        assert!(got.iter().all(|v| v.is_finite()), "{what}");
        assert_eq!(got, want, "{what}: features differ from the float32 checkpoint of the same values");
    }
}

/// The joint CLIP loader (both towers and the 0-d `logit_scale`) takes a bf16 checkpoint too.
#[test]
fn a_bf16_clip_checkpoint_gives_the_float32_logits() {
    let device = Device::flex();
    let original = read_f32(&fixture("clip").join("model.safetensors"));
    let stored = copy_fixture("clip");
    let represented = write_as(&stored.path().join("model.safetensors"), &original, |_| Store::Bf16);
    let reference = copy_fixture("clip");
    write_as(&reference.path().join("model.safetensors"), &represented, |_| Store::F32);
    let ids = vec![vec![739, 5, 6, 7, 740], vec![739, 9, 740, 740, 740]];
    let logits = |dir: &Path| {
        let (model, _) = ClipModel::load(dir.to_str().unwrap(), &device).unwrap();
        model
            .forward(images(30, &device), &ids, false)
            .unwrap()
            .logits_per_image
            .into_data()
            .try_to_vec::<f32>()
            .unwrap()
    };
    assert_eq!(logits(stored.path()), logits(reference.path()));
}

/// Defect 5: a NaN or infinite weight is an error naming the tensor (it gave finite, wrong features
/// with exit 0); every such tensor is listed.
#[test]
fn non_finite_weights_are_an_error_naming_each_tensor() {
    let device = Device::flex();
    let key = "encoder.layer.0.attention.attention.key.weight";
    let fc1 = "encoder.layer.2.intermediate.dense.weight";
    for (store, bad) in
        [(Store::F32, f32::NAN), (Store::F16, f32::INFINITY), (Store::Bf16, f32::NEG_INFINITY)]
    {
        let mut tensors = read_f32(&fixture("vit").join("model.safetensors"));
        for (name, _, values) in tensors.iter_mut() {
            if name == key || name == fc1 {
                values[7] = bad;
            }
        }
        let dir = copy_fixture("vit");
        write_as(&dir.path().join("model.safetensors"), &tensors, |_| store);
        let err = Encoder::load_dir(dir.path(), &device).unwrap_err();
        assert!(matches!(err, ModelError::NonFiniteWeights { .. }), "{store:?}: {err}");
        let text = err.to_string();
        assert!(text.contains("model.safetensors"), "{text}");
        assert!(text.contains(&format!("tensor '{key}': 1 of 2304 values are not finite")), "{text}");
        assert!(text.contains(&format!("tensor '{fc1}': 1 of 3840 values are not finite")), "{text}");
    }
    // The CLIP logit scale is read apart from burn's store: checked too.
    let mut tensors = read_f32(&fixture("clip").join("model.safetensors"));
    tensors.iter_mut().find(|t| t.0 == "logit_scale").unwrap().2[0] = f32::NAN;
    let dir = copy_fixture("clip");
    write_as(&dir.path().join("model.safetensors"), &tensors, |_| Store::F32);
    let err = ClipModel::load(dir.path().to_str().unwrap(), &device).unwrap_err().to_string();
    assert!(err.contains("tensor 'logit_scale'") && err.contains("not finite"), "{err}");
}

/// `config.json` of `family` with `edit` applied to its JSON (at `path`, a `/`-separated key path).
fn load_with_field(family: &str, key_path: &str, value: Value) -> Result<(), ModelError> {
    let dir = copy_fixture(family);
    let cfg_path = dir.path().join("config.json");
    let mut json: Value = serde_json::from_str(&std::fs::read_to_string(&cfg_path).unwrap()).unwrap();
    let mut at = &mut json;
    let parts: Vec<&str> = key_path.split('/').collect();
    for p in &parts[..parts.len() - 1] {
        at = at.get_mut(*p).unwrap_or_else(|| panic!("{family}: no '{p}'"));
    }
    at[parts[parts.len() - 1]] = value;
    std::fs::write(&cfg_path, serde_json::to_string(&json).unwrap()).unwrap();
    let device = Device::flex();
    if family == "clip" {
        ClipModel::load(dir.path().to_str().unwrap(), &device).map(|_| ())
    } else {
        Encoder::load_dir(dir.path(), &device).map(|_| ())
    }
}

/// Defect 3: every size field a forward pass depends on, in every family, set to 0 (or made
/// inconsistent) is a config error naming `config.json` and the key (`"patch_size": 0` panicked
/// with a division by zero).
#[test]
fn config_fields_a_forward_pass_needs_are_checked_in_every_family() {
    let zero_fields: &[(&str, &[&str])] = &[
        (
            "vit",
            &[
                "patch_size",
                "image_size",
                "hidden_size",
                "num_attention_heads",
                "num_hidden_layers",
                "intermediate_size",
                "num_channels",
                "layer_norm_eps",
            ],
        ),
        ("deit", &["patch_size", "hidden_size", "num_attention_heads"]),
        ("dinov2", &["patch_size", "image_size", "hidden_size", "num_attention_heads", "mlp_ratio"]),
        (
            "clip",
            &[
                "vision_config/patch_size",
                "vision_config/image_size",
                "vision_config/hidden_size",
                "vision_config/num_attention_heads",
                "vision_config/num_hidden_layers",
                "text_config/hidden_size",
                "text_config/num_attention_heads",
                "text_config/vocab_size",
                "text_config/max_position_embeddings",
                "projection_dim",
            ],
        ),
        ("siglip", &["patch_size", "image_size", "hidden_size", "num_attention_heads", "intermediate_size"]),
    ];
    for (family, fields) in zero_fields {
        for field in *fields {
            let err = load_with_field(family, field, Value::from(0)).unwrap_err();
            let text = err.to_string();
            let key = field.replace('/', ".");
            assert!(matches!(err, ModelError::Config { .. }), "{family} {field}: {text}");
            assert!(
                text.contains("config.json") && text.contains(&format!("'{key}'")),
                "{family} {field}: {text}"
            );
        }
    }
    // Inconsistent but positive: heads that do not divide the width, an image smaller than a patch,
    // a negative epsilon, a size far beyond any model.
    for (family, field, value, expect) in [
        ("vit", "num_attention_heads", 5, "is not a multiple of field 'num_attention_heads'"),
        ("vit", "patch_size", 31, "smaller than field 'patch_size'"),
        ("clip", "text_config/num_attention_heads", 5, "'text_config.hidden_size'"),
        ("clip", "vision_config/patch_size", 64, "'vision_config.image_size'"),
        ("siglip", "num_attention_heads", 7, "'num_attention_heads'"),
        ("dinov2", "patch_size", 1000, "smaller than field 'patch_size'"),
    ] {
        let err = load_with_field(family, field, Value::from(value)).unwrap_err().to_string();
        assert!(err.contains(expect), "{family} {field}={value}: {err}");
    }
    let err = load_with_field("vit", "layer_norm_eps", Value::from(-1e-6)).unwrap_err().to_string();
    assert!(err.contains("'layer_norm_eps' must be a finite number > 0"), "{err}");
    let err = load_with_field("vit", "hidden_size", Value::from(1u64 << 40)).unwrap_err().to_string();
    assert!(err.contains("'hidden_size' must be an integer from 1 to 1048576"), "{err}");
}

/// A config describing a model far larger than its weights file is refused before anything is
/// allocated (a mistyped width would otherwise abort the process on allocation).
#[test]
fn a_config_larger_than_its_weights_file_is_refused_before_allocation() {
    for (family, field, value) in [
        ("vit", "num_hidden_layers", 1 << 20),
        ("vit", "intermediate_size", 1 << 20),
        ("dinov2", "image_size", 1 << 20),
        ("clip", "text_config/vocab_size", 1 << 20),
        ("siglip", "num_hidden_layers", 100_000),
    ] {
        let err = load_with_field(family, field, Value::from(value)).unwrap_err().to_string();
        assert!(err.contains("config.json") && err.contains("holds only"), "{family} {field}: {err}");
    }
}
