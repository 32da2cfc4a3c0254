//! The vision tower of a multimodal Hugging Face checkpoint, extracted into a standalone checkpoint
//! of the tower's own type, which every encoder command then loads.
//!
//! MedGemma (`Gemma3ForConditionalGeneration`, `model_type` `gemma3`) carries a SigLIP image encoder
//! next to its language decoder; PaliGemma and transformers' LLaVA layouts do the same with a SigLIP
//! or CLIP tower. Their `config.json` describes the tower in `vision_config` (`siglip_vision_model`
//! or `clip_vision_model`), and the weights (one `model.safetensors`, or shards listed in
//! `model.safetensors.index.json`) hold it under one of these prefixes:
//!
//! | prefix | written by |
//! |---|---|
//! | `vision_tower.vision_model.` | transformers 4.x (the MedGemma release) |
//! | `model.vision_tower.vision_model.` | transformers 4.52+ in-memory names |
//! | `vision_tower.` | transformers 5 `save_pretrained` (the tower without its `vision_model` level) |
//! | `model.vision_tower.` | transformers 5 in-memory names |
//!
//! The tower's tensors are read by byte range (a shard is never read whole), renamed under
//! `vision_model.` (the layout of a `SiglipVisionModel` / `CLIPVisionModel` on the hub), and written
//! with `vision_config` as the new `config.json` and the checkpoint's `preprocessor_config.json`. The
//! directory is loaded back as an [`crate::Encoder`] before it is renamed into place
//! ([`super::staged_dir`]). The decoder and everything else is left out; so is the multimodal
//! projector, unless asked for (Gemma 3 only): then its two tensors are written under their
//! transformers names and `config.json` gets a `calibra_projector` object
//! ([`crate::gemma3_projector`]), so that the feature is the vision stack's output at the decoder's
//! input, as CRS-Bench probes MedGemma.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use burn::tensor::Device;
use serde_json::Value;

use super::config::read_config;
use super::staged_dir::{publish_directory, refuse_existing};
use crate::clip::open_clip::convert::{Owned, pt_format, serialize_tensors};
use crate::error::ModelError;
use crate::gemma3_projector::{Gemma3ProjectorConfig, PROJECTOR_KEY};

/// The tower types calibra loads standalone.
const TOWER_TYPES: [&str; 2] = ["siglip_vision_model", "clip_vision_model"];

/// Where the tower's weights may sit, most specific first.
const PREFIXES: [&str; 4] = [
    "model.vision_tower.vision_model.",
    "vision_tower.vision_model.",
    "model.vision_tower.",
    "vision_tower.",
];

/// What an extraction read and wrote.
#[derive(Debug, Clone)]
pub struct ExtractedVisionTower {
    /// The directory written.
    pub out: PathBuf,
    /// The source checkpoint's `model_type` (e.g. `gemma3`).
    pub source_model_type: String,
    /// The tower's `model_type` (e.g. `siglip_vision_model`).
    pub tower_model_type: String,
    /// The prefix the tower's tensors had.
    pub prefix: String,
    /// Tensors written, and their parameters.
    pub tensors: usize,
    pub parameters: u64,
    /// Weight files read (shards that hold no tower tensor are not opened).
    pub files_read: usize,
    /// What happened to `preprocessor_config.json`.
    pub preprocessor: PreprocessorNote,
    /// With the projector: its tokens per image and output width.
    pub projector: Option<Gemma3ProjectorConfig>,
}

/// Where Gemma 3's projector may sit (transformers 5 in-memory and saved names, 4.x names).
const PROJECTOR_PREFIXES: [&str; 2] = ["model.multi_modal_projector.", "multi_modal_projector."];
/// Gemma3MultiModalProjector's parameters.
const PROJECTOR_PARAMS: [&str; 2] = ["mm_input_projection_weight", "mm_soft_emb_norm.weight"];

/// The fate of the checkpoint's `preprocessor_config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreprocessorNote {
    /// Copied unchanged.
    Copied,
    /// Copied without `do_pan_and_scan` = true (Gemma 3's extra crops for the decoder's prompt; the
    /// tower alone is fed one resized image).
    PanAndScanDropped,
    /// The checkpoint has none (features need one: add it).
    Missing,
}

/// The tower type of a multimodal `config.json` that [`extract_vision_tower`] can extract, if any
/// (`None` for the CLIP / SigLIP models calibra loads whole, whose configs also carry a `vision_config`).
pub fn extractable_tower(config: &super::HfConfig) -> Option<&str> {
    let outer = config.json.get("model_type").and_then(Value::as_str).unwrap_or("");
    if crate::encoder::SUPPORTED_MODEL_TYPES.contains(&outer) {
        return None;
    }
    let tower = config.json.get("vision_config")?.get("model_type")?.as_str()?;
    TOWER_TYPES.contains(&tower).then_some(tower)
}

/// An error naming `calibra convert vision-tower` when `dir` holds a multimodal checkpoint whose
/// tower calibra loads only once extracted (checked before anything hashes or reads its weights).
pub fn refuse_multimodal(dir: &Path) -> Result<(), ModelError> {
    let Ok(config) = read_config(&dir.join("config.json")) else { return Ok(()) };
    match extractable_tower(&config) {
        None => Ok(()),
        Some(tower) => Err(ModelError::UnsupportedConfig {
            path: config.path.clone(),
            message: format!(
                "model_type '{}' is a multimodal model; calibra loads its {tower} vision tower on its own after \
                 `calibra convert vision-tower {} --out <DIR>` (then --encoder <DIR>)",
                config.json.get("model_type").and_then(Value::as_str).unwrap_or("(none)"),
                dir.display()
            ),
        }),
    }
}

/// One tensor's entry in a safetensors header.
#[derive(Debug)]
struct Entry {
    file: PathBuf,
    dtype: String,
    shape: Vec<usize>,
    /// Absolute byte range in the file.
    start: u64,
    end: u64,
}

fn store_error(path: &Path, message: impl Into<String>) -> ModelError {
    ModelError::Store { path: path.into(), message: message.into() }
}

/// The tensors of one safetensors file, from its header alone. Parsed here because the safetensors
/// crate's `read_metadata` checks the header against the whole file's bytes, which would mean reading
/// (or memory-mapping, which `forbid(unsafe_code)` rules out) a multi-gigabyte shard to take a
/// fraction of it.
fn header(path: &Path) -> Result<BTreeMap<String, Entry>, ModelError> {
    let io = |source| ModelError::Io { path: path.into(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len).map_err(io)?;
    let n = u64::from_le_bytes(len);
    if n > 100 << 20 || 8 + n > file_len {
        return Err(store_error(path, format!("header length {n} does not fit a {file_len}-byte file")));
    }
    let mut text = vec![0u8; n as usize];
    file.read_exact(&mut text).map_err(io)?;
    let json: Value =
        serde_json::from_slice(&text).map_err(|e| store_error(path, format!("header is not JSON: {e}")))?;
    let object = json.as_object().ok_or_else(|| store_error(path, "header is not a JSON object"))?;
    let mut out = BTreeMap::new();
    for (name, v) in object.iter().filter(|(k, _)| *k != "__metadata__") {
        let bad = || store_error(path, format!("tensor '{name}': malformed header entry {v}"));
        let dtype = v["dtype"].as_str().ok_or_else(bad)?.to_string();
        let shape: Vec<usize> = v["shape"]
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        let offsets = v["data_offsets"].as_array().ok_or_else(bad)?;
        let (Some(b), Some(e)) =
            (offsets.first().and_then(Value::as_u64), offsets.get(1).and_then(Value::as_u64))
        else {
            return Err(bad());
        };
        let (start, end) = (8 + n + b, 8 + n + e);
        if b > e || end > file_len {
            return Err(store_error(path, format!("tensor '{name}': bytes {b}..{e} lie outside the file")));
        }
        out.insert(name.clone(), Entry { file: path.into(), dtype, shape, start, end });
    }
    Ok(out)
}

/// The weight files of `dir`: `model.safetensors`, or the shards `model.safetensors.index.json` lists.
fn weight_files(dir: &Path) -> Result<Vec<PathBuf>, ModelError> {
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let index = dir.join("model.safetensors.index.json");
    let text = std::fs::read_to_string(&index).map_err(|_| {
        ModelError::Input(format!(
            "{}: neither model.safetensors nor model.safetensors.index.json is there",
            dir.display()
        ))
    })?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| ModelError::Config { path: index.clone(), message: e.to_string() })?;
    let map = json["weight_map"].as_object().ok_or_else(|| ModelError::Config {
        path: index.clone(),
        message: "missing object 'weight_map' (tensor name → shard file)".into(),
    })?;
    let mut shards: Vec<String> = Vec::new();
    for (name, file) in map {
        let file = file.as_str().ok_or_else(|| ModelError::Config {
            path: index.clone(),
            message: format!("weight_map.{name}: expected a file name"),
        })?;
        if file.contains('/') || file.contains('\\') || file.starts_with('.') {
            return Err(ModelError::Config {
                path: index.clone(),
                message: format!("weight_map.{name}: '{file}' is not a file name in this directory"),
            });
        }
        if !shards.iter().any(|s| s == file) {
            shards.push(file.to_string());
        }
    }
    if shards.is_empty() {
        return Err(ModelError::Config { path: index, message: "'weight_map' lists no shard".into() });
    }
    shards.sort();
    Ok(shards.into_iter().map(|s| dir.join(s)).collect())
}

/// The prefix under which the tower's patch embedding sits, if any.
fn tower_prefix(names: &BTreeMap<String, Entry>) -> Option<&'static str> {
    PREFIXES.into_iter().find(|p| names.contains_key(&format!("{p}embeddings.patch_embedding.weight")))
}

fn read_range(entry: &Entry) -> Result<Vec<u8>, ModelError> {
    let io = |source| ModelError::Io { path: entry.file.clone(), source };
    let mut file = std::fs::File::open(&entry.file).map_err(io)?;
    file.seek(SeekFrom::Start(entry.start)).map_err(io)?;
    let mut bytes = vec![0u8; (entry.end - entry.start) as usize];
    file.read_exact(&mut bytes).map_err(io)?;
    Ok(bytes)
}

fn safetensors_dtype(name: &str, dtype: &str, path: &Path) -> Result<safetensors::Dtype, ModelError> {
    use safetensors::Dtype;
    Ok(match dtype {
        "F16" => Dtype::F16,
        "BF16" => Dtype::BF16,
        "F32" => Dtype::F32,
        "F64" => Dtype::F64,
        other => {
            return Err(store_error(
                path,
                format!("tensor '{name}' has dtype {other}, expected a float type"),
            ));
        }
    })
}

/// The projector of a Gemma 3 config, and its tensors to copy (source name → written name).
fn projector_plan(
    config: &super::HfConfig,
    source_model_type: &str,
    entries: &BTreeMap<String, Entry>,
) -> Result<(Gemma3ProjectorConfig, Vec<(String, String)>), ModelError> {
    if source_model_type != "gemma3" {
        return Err(ModelError::UnsupportedConfig {
            path: config.path.clone(),
            message: format!(
                "--projector: model_type '{source_model_type}'; only Gemma 3's multi_modal_projector \
                 (MedGemma) is implemented"
            ),
        });
    }
    let Some(prefix) = PROJECTOR_PREFIXES
        .into_iter()
        .find(|p| PROJECTOR_PARAMS.iter().all(|n| entries.contains_key(&format!("{p}{n}"))))
    else {
        return Err(ModelError::Config {
            path: config.path.clone(),
            message: format!(
                "--projector: the weights hold no Gemma 3 projector (looked for {} under {})",
                PROJECTOR_PARAMS.join(" and "),
                PROJECTOR_PREFIXES.join(" or ")
            ),
        });
    };
    // Gemma3Config's default, as transformers reads a config without the key.
    let tokens = config.usize_or("mm_tokens_per_image", 256)?;
    // The projection is [vision hidden, text hidden]; its shape gives the feature width, checked
    // against the tower's width and, when the config states it, the decoder's.
    let vision_width = config.nested("vision_config")?.req_size("hidden_size")?;
    let weight = &entries[&format!("{prefix}{}", PROJECTOR_PARAMS[0])];
    let norm = &entries[&format!("{prefix}{}", PROJECTOR_PARAMS[1])];
    let [rows, width] = weight.shape[..] else {
        return Err(store_error(&weight.file, format!("'{prefix}{}' is not a matrix", PROJECTOR_PARAMS[0])));
    };
    let text_width = config.nested("text_config").ok().and_then(|t| t.req_size("hidden_size").ok());
    if rows != vision_width || norm.shape != [vision_width] || text_width.is_some_and(|t| t != width) {
        return Err(store_error(
            &weight.file,
            format!(
                "the projector's shapes ({:?}, norm {:?}) do not fit the tower's width {vision_width} and the \
                 decoder's {}",
                weight.shape,
                norm.shape,
                text_width.map_or("(not stated)".to_string(), |t| t.to_string())
            ),
        ));
    }
    let copies = PROJECTOR_PARAMS
        .iter()
        .map(|n| (format!("{prefix}{n}"), format!("multi_modal_projector.{n}")))
        .collect();
    Ok((Gemma3ProjectorConfig { mm_tokens_per_image: tokens, text_hidden_size: width }, copies))
}

/// Extracts the vision tower of the multimodal checkpoint in `dir` into the new directory `out`;
/// with `projector`, Gemma 3's multimodal projector too (see the module docs).
pub fn extract_vision_tower(
    dir: &Path,
    out: &Path,
    projector: bool,
) -> Result<ExtractedVisionTower, ModelError> {
    refuse_existing(out)?;
    let config = read_config(&dir.join("config.json"))?;
    let source_model_type =
        config.json.get("model_type").and_then(Value::as_str).unwrap_or("(none)").to_string();
    let vision = match config.json.get("vision_config") {
        Some(v) if v.is_object() => v.clone(),
        _ => {
            return Err(ModelError::Config {
                path: config.path.clone(),
                message: format!(
                    "no object 'vision_config': model_type '{source_model_type}' is not a multimodal checkpoint \
                     with a separate vision tower"
                ),
            });
        }
    };
    let tower_model_type = vision.get("model_type").and_then(Value::as_str).unwrap_or("(none)").to_string();
    if !TOWER_TYPES.contains(&tower_model_type.as_str()) {
        return Err(ModelError::UnsupportedModelType {
            path: config.path.clone(),
            model_type: format!("{tower_model_type} (vision_config.model_type)"),
            supported: TOWER_TYPES.join(", "),
        });
    }

    let files = weight_files(dir)?;
    let mut entries = BTreeMap::new();
    for file in &files {
        entries.append(&mut header(file)?);
    }
    let Some(prefix) = tower_prefix(&entries) else {
        let looked: Vec<String> =
            PREFIXES.iter().map(|p| format!("{p}embeddings.patch_embedding.weight")).collect();
        return Err(store_error(
            &files[0],
            format!("no vision tower weights found (looked for {})", looked.join(", ")),
        ));
    };
    // With the long prefix, nothing else may sit under the tower.
    let tower_root = prefix.trim_end_matches("vision_model.");
    if let Some(stray) = entries.keys().find(|k| k.starts_with(tower_root) && !k.starts_with(prefix)) {
        return Err(store_error(
            &entries[stray].file,
            format!(
                "'{stray}' is part of the vision tower but outside '{prefix}': a layout calibra does not know"
            ),
        ));
    }

    let mut tensors: Vec<(String, Owned)> = Vec::new();
    let mut parameters = 0u64;
    let mut files_read = std::collections::BTreeSet::new();
    for (name, entry) in entries.iter().filter(|(k, _)| k.starts_with(prefix)) {
        let dtype = safetensors_dtype(name, &entry.dtype, &entry.file)?;
        let data = read_range(entry)?;
        files_read.insert(entry.file.clone());
        parameters += entry.shape.iter().product::<usize>() as u64;
        let renamed = format!("vision_model.{}", &name[prefix.len()..]);
        tensors.push((renamed, Owned { dtype, shape: entry.shape.clone(), data }));
    }

    let mut vision = vision;
    let mut projector_summary = None;
    if projector {
        let (projector, copies) = projector_plan(&config, &source_model_type, &entries)?;
        for (from, to) in copies {
            let entry = &entries[&from];
            let dtype = safetensors_dtype(&from, &entry.dtype, &entry.file)?;
            files_read.insert(entry.file.clone());
            parameters += entry.shape.iter().product::<usize>() as u64;
            tensors.push((to, Owned { dtype, shape: entry.shape.clone(), data: read_range(entry)? }));
        }
        if let Some(v) = vision.as_object_mut() {
            v.insert(PROJECTOR_KEY.into(), projector.to_json());
        }
        projector_summary = Some(projector);
    }

    let weights_name = "model.safetensors";
    let weights = serialize_tensors(&tensors, pt_format(), &out.join(weights_name))?;
    let config_text =
        serde_json::to_string_pretty(&vision).map_err(|e| ModelError::Input(e.to_string()))? + "\n";

    let (preprocessor, preprocessor_text) = preprocessor_config(dir)?;
    let mut files_out: Vec<(&str, &[u8])> =
        vec![("config.json", config_text.as_bytes()), (weights_name, &weights)];
    if let Some(text) = &preprocessor_text {
        files_out.push(("preprocessor_config.json", text.as_bytes()));
    }
    publish_directory(out, &files_out, |staged| {
        crate::Encoder::load_dir(staged, &Device::flex()).map(|_| ()).map_err(|e| {
            ModelError::Input(format!(
                "{}: the extracted vision tower does not load as a {tower_model_type}: {e}",
                dir.display()
            ))
        })
    })?;
    Ok(ExtractedVisionTower {
        out: out.into(),
        source_model_type,
        tower_model_type,
        prefix: prefix.to_string(),
        tensors: tensors.len(),
        parameters,
        files_read: files_read.len(),
        preprocessor,
        projector: projector_summary,
    })
}

/// The checkpoint's `preprocessor_config.json`, without Gemma 3's pan-and-scan when it is on.
fn preprocessor_config(dir: &Path) -> Result<(PreprocessorNote, Option<String>), ModelError> {
    let path = dir.join("preprocessor_config.json");
    if !path.is_file() {
        return Ok((PreprocessorNote::Missing, None));
    }
    let text =
        std::fs::read_to_string(&path).map_err(|source| ModelError::Io { path: path.clone(), source })?;
    let mut json: Value = serde_json::from_str(&text)
        .map_err(|e| ModelError::Config { path: path.clone(), message: e.to_string() })?;
    let Some(object) = json.as_object_mut() else {
        return Err(ModelError::Config { path, message: "top level is not a JSON object".into() });
    };
    if object.get("do_pan_and_scan").and_then(Value::as_bool) == Some(true) {
        object.remove("do_pan_and_scan");
        let text = serde_json::to_string_pretty(&json).map_err(|e| ModelError::Input(e.to_string()))? + "\n";
        return Ok((PreprocessorNote::PanAndScanDropped, Some(text)));
    }
    Ok((PreprocessorNote::Copied, Some(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry { file: "m.safetensors".into(), dtype: "F32".into(), shape: vec![1], start: 0, end: 4 }
    }

    #[test]
    fn the_most_specific_prefix_wins() {
        let mut names = BTreeMap::new();
        names.insert("vision_tower.vision_model.embeddings.patch_embedding.weight".to_string(), entry());
        assert_eq!(tower_prefix(&names), Some("vision_tower.vision_model."));
        let mut names = BTreeMap::new();
        names.insert("model.vision_tower.embeddings.patch_embedding.weight".to_string(), entry());
        assert_eq!(tower_prefix(&names), Some("model.vision_tower."));
        let mut names = BTreeMap::new();
        names.insert("vision_model.embeddings.patch_embedding.weight".to_string(), entry());
        assert_eq!(tower_prefix(&names), None);
    }

    #[test]
    fn an_index_must_name_shards_in_its_own_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let index = tmp.path().join("model.safetensors.index.json");
        std::fs::write(&index, r#"{"weight_map": {}}"#).unwrap();
        assert!(weight_files(tmp.path()).unwrap_err().to_string().contains("lists no shard"));
        std::fs::write(&index, r#"{"weight_map": {"w": "../elsewhere.safetensors"}}"#).unwrap();
        assert!(weight_files(tmp.path()).unwrap_err().to_string().contains("not a file name"));
        std::fs::write(&index, r#"{"metadata": {}}"#).unwrap();
        assert!(weight_files(tmp.path()).unwrap_err().to_string().contains("weight_map"));
    }

    #[test]
    fn a_truncated_or_lying_header_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("m.safetensors");
        std::fs::write(&path, 1000u64.to_le_bytes()).unwrap();
        assert!(header(&path).unwrap_err().to_string().contains("does not fit"));
        let head = br#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
        let mut bytes = (head.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(head);
        bytes.extend_from_slice(&[0u8; 8]);
        std::fs::write(&path, &bytes).unwrap();
        assert!(header(&path).unwrap_err().to_string().contains("outside the file"));
    }
}
