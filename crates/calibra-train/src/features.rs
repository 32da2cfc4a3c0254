//! Frozen features: one encoder pass per (encoder, dataset, split, condition), stored in a
//! safetensors file that carries its sample ids, labels and a fingerprint of everything that
//! determines the numbers. Asking again with the same fingerprint reads the file instead of running
//! the encoder, so every probe, label fraction and seed of a study shares one pass.
//!
//! File layout (`FORMAT_VERSION` 1):
//!
//! ```text
//! tensors   features.<layer>   f32 [n, d]   one per requested depth fraction, e.g. features.0.5
//!           labels             f32 [n]      class index (single-label tasks), or
//!                              f32 [n, L]   1 / 0 / NaN = missing (multilabel tasks)
//! metadata  calibra_features   FORMAT_VERSION
//!           fingerprint        hex SHA-256 (see `FeatureRequest::fingerprint`)
//!           ids                JSON list of sample ids, in row order
//!           classes            JSON list of class / label names
//!           task               "single" | "multilabel"
//!           splits             JSON list of each row's split (train / calibration / test); only in
//!                              a file of every split (`split` = "all", see [`SplitSelection`])
//!           encoder, data, split, condition, layers   what was asked, for people
//! ```

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use burn::tensor::{Device, Tensor, TensorData};
use calibra_data::{
    BadImagePolicy, Dataset, DatasetSpec, LoadOptions, Perturbation, PreprocessConfig, Severity,
    SkippedSample, Split, SplitConfig, Target, decode_samples, load_dataset, perturb, split_dataset,
};
use calibra_models::Encoder;
use calibra_models::hf::file_sha256::{file_sha256, hex};
use calibra_models::hf::floats::F32View;
use calibra_models::hf::resolve_checkpoint;
use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};

mod split_selection;
pub use split_selection::SplitSelection;

/// Version of the file layout; part of the fingerprint.
pub const FORMAT_VERSION: &str = "1";

/// Errors of the feature pass, each naming the file or input at fault.
#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    #[error(transparent)]
    Data(#[from] calibra_data::DataError),
    #[error(transparent)]
    Model(#[from] calibra_models::ModelError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {why}", path.display())]
    Format { path: PathBuf, why: String },
    #[error("{0}")]
    Invalid(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> FeatureError + '_ {
    move |source| FeatureError::Io { path: path.to_path_buf(), source }
}

/// The test condition of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureCondition {
    Clean,
    Perturbed { perturbation: Perturbation, severity: Severity },
}

impl FeatureCondition {
    /// `clean` or `<perturbation>:<severity>` (e.g. `rician-noise:3`).
    pub fn parse(text: &str) -> Result<Self, FeatureError> {
        if text == "clean" {
            return Ok(FeatureCondition::Clean);
        }
        let (name, level) = text.split_once(':').ok_or_else(|| {
            FeatureError::Invalid(format!(
                "condition `{text}`: expected `clean` or `<perturbation>:<severity>`"
            ))
        })?;
        let perturbation = Perturbation::parse(name).ok_or_else(|| {
            FeatureError::Invalid(format!("condition `{text}`: unknown perturbation `{name}` (known: gaussian-blur, jpeg, contrast, rician-noise, fov-crop)"))
        })?;
        let level: u8 = level.parse().map_err(|_| {
            FeatureError::Invalid(format!("condition `{text}`: severity `{level}` is not 1..5"))
        })?;
        Ok(FeatureCondition::Perturbed { perturbation, severity: Severity::new(level)? })
    }

    /// The inverse of [`parse`](Self::parse).
    pub fn name(&self) -> String {
        match self {
            FeatureCondition::Clean => "clean".into(),
            FeatureCondition::Perturbed { perturbation, severity } => {
                format!("{}:{}", perturbation.name(), severity.level())
            }
        }
    }
}

/// What to extract.
#[derive(Debug, Clone)]
pub struct FeatureRequest {
    /// A checkpoint directory, `hf:org/name[@rev]`, or an HF cache id.
    pub encoder: String,
    /// A calibra-data spec (`FORMAT:LOCATION?k=v`).
    pub data: String,
    /// One split, or all of them in one file (each row's split recorded).
    pub split: SplitSelection,
    pub split_config: SplitConfig,
    pub condition: FeatureCondition,
    /// Depth fractions in (0, 1]: 1.0 = the final representation.
    pub layers: Vec<f64>,
    pub batch_size: usize,
}

/// Features of one pass, in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureSet {
    pub ids: Vec<String>,
    pub classes: Vec<String>,
    pub targets: Vec<Target>,
    /// `(depth fraction, row-major [n, dim])`, in request order.
    pub layers: Vec<(f64, Vec<f32>)>,
    pub dim: usize,
    pub fingerprint: String,
    /// Each row's split, for a pass over every split ([`SplitSelection::All`]); `None` for a pass
    /// over one split.
    pub splits: Option<Vec<Split>>,
}

/// Where a pass's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureSource {
    Cache,
    Computed,
}

/// The prepared inputs of a pass: the loaded dataset, the chosen split, the encoder's checkpoint
/// directory and its preprocessing. Building it loads the manifest but no image.
pub struct PreparedPass {
    pub request: FeatureRequest,
    pub dataset: Dataset,
    pub indices: Vec<usize>,
    /// The split of each of `indices`.
    pub row_splits: Vec<Split>,
    pub checkpoint: PathBuf,
    pub preprocess: PreprocessConfig,
    pub fingerprint: String,
}

impl PreparedPass {
    /// Resolve the encoder, read its preprocessing, load the dataset and the split, and compute the
    /// fingerprint: SHA-256 over the format version, `config.json`, `model.safetensors` (contents; for
    /// OpenCLIP `open_clip_config.json`, `open_clip_model.safetensors`),
    /// the preprocessing, the data spec, the split and its configuration, the sample ids in order,
    /// the condition (with the perturbation's definition version) and the layers.
    pub fn new(request: FeatureRequest) -> Result<Self, FeatureError> {
        validate_layers(&request.layers)?;
        if request.batch_size == 0 {
            return Err(FeatureError::Invalid("batch size must be at least 1".into()));
        }
        let checkpoint = resolve_checkpoint(&request.encoder)?.dir;
        calibra_models::hf::vision_tower::refuse_multimodal(&checkpoint)?;
        let preprocess = preprocess_for(&checkpoint)?;
        let spec = DatasetSpec::parse(&request.data)?;
        let dataset = load_dataset(&spec, &LoadOptions::default())?;
        let assignment = split_dataset(&dataset, &request.split_config)?;
        let (indices, row_splits): (Vec<usize>, Vec<Split>) =
            request.split.rows(&assignment).into_iter().unzip();
        if indices.is_empty() {
            let what = match request.split {
                SplitSelection::One(split) => format!("the {} split is empty", split.name()),
                SplitSelection::All => "it has no samples".to_string(),
            };
            return Err(FeatureError::Invalid(format!("dataset `{}`: {what}", request.data)));
        }
        let mut h = Sha256::new();
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part(b"calibra-features");
        part(FORMAT_VERSION.as_bytes());
        // config.json + model.safetensors, or OpenCLIP's open_clip_config.json + open_clip_model.safetensors.
        for path in (calibra_models::hf::Checkpoint { dir: checkpoint.clone() }).model_files() {
            part(&file_sha256(&path)?);
        }
        part(format!("{preprocess:?}").as_bytes());
        part(request.data.as_bytes());
        part(request.split.name().as_bytes());
        part(format!("{:?}", request.split_config).as_bytes());
        for &i in &indices {
            part(dataset.samples[i].id.as_bytes());
        }
        part(request.condition.name().as_bytes());
        if let FeatureCondition::Perturbed { perturbation, .. } = request.condition {
            // A new definition of a perturbation gives new pixels: features cached under the old one
            // must not be reused.
            part(&perturbation.definition_version().to_le_bytes());
        }
        part(format!("{:?}", request.layers).as_bytes());
        let fingerprint = hex(&h.finalize());
        Ok(PreparedPass { request, dataset, indices, row_splits, checkpoint, preprocess, fingerprint })
    }

    /// Run the encoder over the split in batches, calling `progress(done, total)` after each batch.
    pub fn compute(
        &self,
        device: &Device,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<FeatureSet, FeatureError> {
        let encoder = Encoder::load_dir(&self.checkpoint, device)?;
        let total = self.indices.len();
        let mut layers: Vec<(f64, Vec<f32>)> = self.request.layers.iter().map(|&f| (f, Vec::new())).collect();
        let mut dim = 0;
        let mut done = 0;
        progress(0, total);
        for chunk in self.indices.chunks(self.request.batch_size) {
            let images = image_batch(&self.dataset, chunk, &self.preprocess, self.request.condition)?
                .to_tensor(device);
            let outputs = encoder.embed_at_depths(images, &self.request.layers)?;
            let widths: Vec<usize> = outputs.iter().map(|o| o.dims()[1]).collect();
            if widths.iter().any(|&w| w != widths[0]) {
                // One file holds one width `d`; a CNN's stages (ResNet) differ in width.
                return Err(FeatureError::Invalid(format!(
                    "the encoder's features at depths {:?} are {widths:?} wide (a CNN's stage outputs \
                     differ in width) and one feature file holds one width: extract each depth on its \
                     own (`--layers` with one fraction; `calibra run` does one depth per pass)",
                    self.request.layers
                )));
            }
            for ((fraction, rows), out) in layers.iter_mut().zip(outputs) {
                dim = out.dims()[1];
                let data = out.into_data();
                let values = data.as_slice::<f32>().map_err(|e| FeatureError::Invalid(format!("{e:?}")))?;
                self.check_finite(chunk, *fraction, dim, values)?;
                rows.extend_from_slice(values);
            }
            done += chunk.len();
            progress(done, total);
        }
        Ok(FeatureSet {
            ids: self.indices.iter().map(|&i| self.dataset.samples[i].id.clone()).collect(),
            classes: self.dataset.labels.names.clone(),
            targets: self.indices.iter().map(|&i| self.dataset.samples[i].target.clone()).collect(),
            layers,
            dim,
            fingerprint: self.fingerprint.clone(),
            splits: (self.request.split == SplitSelection::All).then(|| self.row_splits.clone()),
        })
    }

    /// A non-finite feature (NaN or ±inf from the encoder) is an error naming the sample, so that no
    /// feature file, probe or record is ever made from it.
    fn check_finite(
        &self,
        chunk: &[usize],
        fraction: f64,
        dim: usize,
        values: &[f32],
    ) -> Result<(), FeatureError> {
        let Some(at) = values.iter().position(|v| !v.is_finite()) else { return Ok(()) };
        let sample = &self.dataset.samples[chunk[at / dim.max(1)]];
        Err(FeatureError::Invalid(format!(
            "encoder `{}` gave a non-finite feature ({} in dimension {} at depth {fraction}) for sample `{}` \
             of `{}`; nothing was written (check the checkpoint's weights and the image)",
            self.request.encoder,
            values[at],
            at % dim.max(1),
            sample.id,
            self.request.data
        )))
    }

    /// Read `out` if it holds this pass's fingerprint, else compute and write it atomically.
    pub fn cached(
        &self,
        out: &Path,
        device: &Device,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(FeatureSet, FeatureSource), FeatureError> {
        if out.exists()
            && let Ok(set) = FeatureSet::read(out)
            && set.fingerprint == self.fingerprint
        {
            return Ok((set, FeatureSource::Cache));
        }
        let set = self.compute(device, progress)?;
        set.write(out, &self.describe())?;
        Ok((set, FeatureSource::Computed))
    }

    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("encoder", self.request.encoder.clone()),
            ("data", self.request.data.clone()),
            ("split", self.request.split.name().to_string()),
            ("condition", self.request.condition.name()),
        ]
    }
}

/// Preprocessed images of one batch: row-major `[n, c, h, w]` pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageBatch {
    /// `[c, h, w]` of every image.
    pub shape: [usize; 3],
    pub pixels: Vec<f32>,
}

impl ImageBatch {
    /// The number of images.
    pub fn len(&self) -> usize {
        self.pixels.len() / self.shape.iter().product::<usize>().max(1)
    }
    pub fn is_empty(&self) -> bool {
        self.pixels.is_empty()
    }
    /// The batch as a `[n, c, h, w]` tensor on `device`.
    pub fn to_tensor(self, device: &Device) -> Tensor<4> {
        let n = self.len();
        let [c, h, w] = self.shape;
        Tensor::<4>::from_data(TensorData::new(self.pixels, [n, c, h, w]), device)
    }
}

/// Decode the samples `indices` of `dataset` (in parallel), perturb them under `condition` (seeded
/// by sample id, so every encoder sees the same pixels) and preprocess them. A sample that cannot
/// be decoded is an error naming it; all images must come out with the same shape.
pub fn image_batch(
    dataset: &Dataset,
    indices: &[usize],
    preprocess: &PreprocessConfig,
    condition: FeatureCondition,
) -> Result<ImageBatch, FeatureError> {
    Ok(batch_under(dataset, indices, preprocess, condition, BadImagePolicy::Fail)?.batch)
}

/// The readable samples of a batch ([`readable_image_batch`]).
#[derive(Debug, Clone)]
pub struct ReadableBatch {
    /// The images of `kept`, in order.
    pub batch: ImageBatch,
    /// The positions in the requested `indices` whose images `batch` holds.
    pub kept: Vec<usize>,
    /// The samples left out, each at its position in `indices`, with its file and why it could not
    /// be read.
    pub skipped: Vec<(usize, SkippedSample)>,
}

/// [`image_batch`] under the dataset's own bad-image policy ([`Dataset::on_bad_image`]): under
/// `skip` a sample that cannot be read is left out of the batch and listed; under `fail` it is the
/// error naming it.
pub fn readable_image_batch(
    dataset: &Dataset,
    indices: &[usize],
    preprocess: &PreprocessConfig,
    condition: FeatureCondition,
) -> Result<ReadableBatch, FeatureError> {
    batch_under(dataset, indices, preprocess, condition, dataset.on_bad_image)
}

fn batch_under(
    dataset: &Dataset,
    indices: &[usize],
    preprocess: &PreprocessConfig,
    condition: FeatureCondition,
    policy: BadImagePolicy,
) -> Result<ReadableBatch, FeatureError> {
    let decoded = decode_samples(dataset, indices, policy, |i, image| {
        let image = match condition {
            FeatureCondition::Clean => image,
            FeatureCondition::Perturbed { perturbation, severity } => {
                perturb(&image, &dataset.samples[i].id, perturbation, severity)?
            }
        };
        Ok(preprocess.apply(&image))
    })?;
    // Kept and skipped samples both come in the order asked: walking `indices`, a position that is
    // not the next kept sample is the next skipped one.
    let mut kept = Vec::with_capacity(decoded.items.len());
    let mut left_out = Vec::with_capacity(decoded.skipped.len());
    let mut items = decoded.items.iter().map(|(i, _)| *i).peekable();
    for (p, &i) in indices.iter().enumerate() {
        if items.next_if_eq(&i).is_some() {
            kept.push(p);
        } else {
            left_out.push(p);
        }
    }
    let skipped: Vec<(usize, SkippedSample)> = left_out.into_iter().zip(decoded.skipped).collect();
    let Some((_, first)) = decoded.items.first() else {
        return Ok(ReadableBatch {
            batch: ImageBatch { shape: [3, 0, 0], pixels: Vec::new() },
            kept,
            skipped,
        });
    };
    let shape = [first.channels, first.height, first.width];
    let mut pixels = Vec::with_capacity(indices.len() * shape.iter().product::<usize>());
    for (i, t) in &decoded.items {
        if [t.channels, t.height, t.width] != shape {
            return Err(FeatureError::Invalid(format!(
                "sample `{}` preprocesses to {}×{}×{}, the batch to {shape:?}: set a centre crop in the \
                 encoder's preprocessor_config.json",
                dataset.samples[*i].id, t.channels, t.height, t.width
            )));
        }
        pixels.extend_from_slice(&t.data);
    }
    Ok(ReadableBatch { batch: ImageBatch { shape, pixels }, kept, skipped })
}

fn validate_layers(layers: &[f64]) -> Result<(), FeatureError> {
    if layers.is_empty() {
        return Err(FeatureError::Invalid("at least one layer fraction is needed (e.g. 1.0)".into()));
    }
    for &f in layers {
        if !(f > 0.0 && f <= 1.0) {
            return Err(FeatureError::Invalid(format!("layer fraction {f} is not in (0, 1]")));
        }
    }
    Ok(())
}

/// The checkpoint's `preprocessor_config.json` (required: without it the encoder's expected
/// resolution and normalisation are unknown, and guessing would silently change every number); for a
/// timm checkpoint without one, timm's eval transform from `config.json`'s `pretrained_cfg`
/// ([`PreprocessConfig::from_timm_json`]).
///
/// A native OpenCLIP checkpoint (`open_clip_config.json`, no `config.json`) uses open_clip's eval
/// transform from its `preprocess_cfg` ([`PreprocessConfig::from_open_clip_json`]), as open_clip does
/// (it never reads a `preprocessor_config.json`).
pub fn preprocess_for(checkpoint: &Path) -> Result<PreprocessConfig, FeatureError> {
    if calibra_models::clip::open_clip::is_open_clip_dir(checkpoint) {
        let path = checkpoint.join(calibra_models::clip::open_clip::OPEN_CLIP_CONFIG);
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        return PreprocessConfig::from_open_clip_json(&text)
            .map_err(|why| FeatureError::Format { path, why });
    }
    let path = checkpoint.join("preprocessor_config.json");
    let config_path = checkpoint.join("config.json");
    if !path.exists()
        && let Ok(text) = fs::read_to_string(&config_path)
        && serde_json::from_str(&text).is_ok_and(|v| calibra_data::timm_preprocess::is_timm_config(&v))
    {
        // A timm checkpoint: the eval transform of its pretrained_cfg.
        return PreprocessConfig::from_timm_json(&text)
            .map_err(|why| FeatureError::Format { path: config_path, why });
    }
    if !path.exists() {
        return Err(FeatureError::Format {
            path,
            why: "missing: the checkpoint must ship its image processor config (resize, crop, mean, std)"
                .into(),
        });
    }
    Ok(PreprocessConfig::from_hf_file(&path)?)
}

fn layer_key(f: f64) -> String {
    format!("features.{f}")
}

impl FeatureSet {
    /// Is this a multilabel feature set?
    pub fn is_multilabel(&self) -> bool {
        matches!(self.targets.first(), Some(Target::Labels(_)))
    }

    /// Rows of the layer at depth fraction `f`, if extracted.
    pub fn layer(&self, f: f64) -> Option<&[f32]> {
        self.layers.iter().find(|(g, _)| *g == f).map(|(_, v)| v.as_slice())
    }

    /// The rows of one split of a file of every split (`calibra features --split all`); `None` when
    /// this set holds one split only (it records no per-row split).
    pub fn only(&self, split: Split) -> Option<FeatureSet> {
        let splits = self.splits.as_ref()?;
        let keep: Vec<usize> = (0..self.ids.len()).filter(|&i| splits[i] == split).collect();
        let layers = self
            .layers
            .iter()
            .map(|(f, rows)| {
                let picked =
                    keep.iter().flat_map(|&i| rows[i * self.dim..(i + 1) * self.dim].iter().copied());
                (*f, picked.collect())
            })
            .collect();
        Some(FeatureSet {
            ids: keep.iter().map(|&i| self.ids[i].clone()).collect(),
            classes: self.classes.clone(),
            targets: keep.iter().map(|&i| self.targets[i].clone()).collect(),
            layers,
            dim: self.dim,
            fingerprint: self.fingerprint.clone(),
            splits: None,
        })
    }

    /// Write to `path` atomically (temporary file in the same directory, synced, renamed).
    pub fn write(&self, path: &Path, describe: &[(&str, String)]) -> Result<(), FeatureError> {
        let n = self.ids.len();
        let mut tensors: Vec<(String, F32View)> = Vec::new();
        for (f, rows) in &self.layers {
            tensors.push((layer_key(*f), F32View::new(vec![n, self.dim], rows)));
        }
        let labels: Vec<f32> = match self.targets.first() {
            Some(Target::Labels(first)) => {
                let l = first.len();
                let mut v = Vec::with_capacity(n * l);
                for t in &self.targets {
                    let Target::Labels(ls) = t else { unreachable!("one task kind per dataset") };
                    v.extend(ls.iter().map(|x| match x {
                        Some(true) => 1.0,
                        Some(false) => 0.0,
                        None => f32::NAN,
                    }));
                }
                tensors.push(("labels".into(), F32View::new(vec![n, l], &v)));
                v
            }
            _ => {
                let v: Vec<f32> = self
                    .targets
                    .iter()
                    .map(|t| match t {
                        Target::Class(c) => *c as f32,
                        Target::Labels(_) => unreachable!("one task kind per dataset"),
                    })
                    .collect();
                tensors.push(("labels".into(), F32View::new(vec![n], &v)));
                v
            }
        };
        drop(labels);
        let mut meta: HashMap<String, String> = HashMap::new();
        meta.insert("calibra_features".into(), FORMAT_VERSION.into());
        meta.insert("fingerprint".into(), self.fingerprint.clone());
        meta.insert("ids".into(), serde_json::to_string(&self.ids).expect("strings serialise"));
        meta.insert("classes".into(), serde_json::to_string(&self.classes).expect("strings serialise"));
        meta.insert("task".into(), if self.is_multilabel() { "multilabel" } else { "single" }.into());
        if let Some(splits) = &self.splits {
            let names: Vec<&str> = splits.iter().map(|s| s.name()).collect();
            meta.insert("splits".into(), serde_json::to_string(&names).expect("strings serialise"));
        }
        meta.insert(
            "layers".into(),
            serde_json::to_string(&self.layers.iter().map(|l| l.0).collect::<Vec<_>>()).expect("floats"),
        );
        for (k, v) in describe {
            meta.insert((*k).to_string(), v.clone());
        }
        let bytes = safetensors::serialize(tensors, Some(meta))
            .map_err(|e| FeatureError::Format { path: path.to_path_buf(), why: e.to_string() })?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        calibra_core::write_bytes_atomically(path, &bytes).map_err(io_err(path))
    }

    /// Read a file written by [`write`](Self::write), checking its layout.
    pub fn read(path: &Path) -> Result<FeatureSet, FeatureError> {
        let bad = |why: String| FeatureError::Format { path: path.to_path_buf(), why };
        let bytes = fs::read(path).map_err(io_err(path))?;
        let (_, header) = SafeTensors::read_metadata(&bytes).map_err(|e| bad(e.to_string()))?;
        let meta = header.metadata().clone().unwrap_or_default();
        let get = |k: &str| meta.get(k).cloned().ok_or_else(|| bad(format!("metadata key `{k}` is missing")));
        let version = get("calibra_features")?;
        if version != FORMAT_VERSION {
            return Err(bad(format!("format version {version}, this calibra reads {FORMAT_VERSION}")));
        }
        let ids: Vec<String> = serde_json::from_str(&get("ids")?).map_err(|e| bad(format!("ids: {e}")))?;
        let classes: Vec<String> =
            serde_json::from_str(&get("classes")?).map_err(|e| bad(format!("classes: {e}")))?;
        let fractions: Vec<f64> =
            serde_json::from_str(&get("layers")?).map_err(|e| bad(format!("layers: {e}")))?;
        let multilabel = get("task")? == "multilabel";
        let file = SafeTensors::deserialize(&bytes).map_err(|e| bad(e.to_string()))?;
        let n = ids.len();
        let read_f32 = |name: &str| -> Result<(Vec<usize>, Vec<f32>), FeatureError> {
            let t = file.tensor(name).map_err(|_| bad(format!("tensor `{name}` is missing")))?;
            if t.dtype() != Dtype::F32 {
                return Err(bad(format!("tensor `{name}`: expected F32, found {:?}", t.dtype())));
            }
            let v = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            Ok((t.shape().to_vec(), v))
        };
        let mut layers = Vec::new();
        let mut dim = 0;
        for f in fractions {
            let (shape, v) = read_f32(&layer_key(f))?;
            if shape.len() != 2 || shape[0] != n {
                return Err(bad(format!("tensor `{}`: shape {shape:?}, expected [{n}, d]", layer_key(f))));
            }
            dim = shape[1];
            layers.push((f, v));
        }
        let splits = match meta.get("splits") {
            None => None,
            Some(text) => {
                let names: Vec<String> =
                    serde_json::from_str(text).map_err(|e| bad(format!("splits: {e}")))?;
                if names.len() != n {
                    return Err(bad(format!("metadata `splits` lists {} rows, `ids` {n}", names.len())));
                }
                let parsed = names
                    .iter()
                    .map(|name| {
                        Split::parse(name).ok_or_else(|| {
                            bad(format!("metadata `splits`: `{name}` is not train, calibration or test"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some(parsed)
            }
        };
        let (shape, labels) = read_f32("labels")?;
        let targets = if multilabel {
            if shape.len() != 2 || shape[0] != n {
                return Err(bad(format!("tensor `labels`: shape {shape:?}, expected [{n}, L]")));
            }
            labels
                .chunks(shape[1])
                .map(|row| {
                    Target::Labels(
                        row.iter().map(|&x| if x.is_nan() { None } else { Some(x > 0.5) }).collect(),
                    )
                })
                .collect()
        } else {
            if shape != [n] {
                return Err(bad(format!("tensor `labels`: shape {shape:?}, expected [{n}]")));
            }
            labels.iter().map(|&c| Target::Class(c as usize)).collect()
        };
        Ok(FeatureSet { ids, classes, targets, layers, dim, fingerprint: get("fingerprint")?, splits })
    }
}
