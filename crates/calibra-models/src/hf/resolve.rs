//! Resolving a checkpoint spec to a directory holding `config.json` + `model.safetensors` (or an
//! OpenCLIP `open_clip_config.json` + `open_clip_model.safetensors`).

use std::path::{Path, PathBuf};

use crate::error::ModelError;

/// A resolved checkpoint directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The directory (a local folder or an HF cache snapshot).
    pub dir: PathBuf,
}

impl Checkpoint {
    /// `<dir>/config.json`.
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// `<dir>/model.safetensors`.
    pub fn weights_path(&self) -> PathBuf {
        self.dir.join("model.safetensors")
    }

    /// Whether this is a native OpenCLIP checkpoint (`open_clip_config.json`, no `config.json`; see
    /// [`crate::clip::open_clip`]).
    pub fn is_open_clip(&self) -> bool {
        crate::clip::open_clip::is_open_clip_dir(&self.dir)
    }

    /// The configuration and weights files that define the model: `config.json` +
    /// `model.safetensors`, or `open_clip_config.json` + `open_clip_model.safetensors` for OpenCLIP.
    pub fn model_files(&self) -> [PathBuf; 2] {
        if self.is_open_clip() {
            use crate::clip::open_clip::{OPEN_CLIP_CONFIG, OPEN_CLIP_WEIGHTS};
            [self.dir.join(OPEN_CLIP_CONFIG), self.dir.join(OPEN_CLIP_WEIGHTS)]
        } else {
            [self.config_path(), self.weights_path()]
        }
    }
}

/// Whether `dir` holds a model configuration: `config.json` (Hugging Face, timm) or
/// `open_clip_config.json` (OpenCLIP).
pub fn has_model_config(dir: &Path) -> bool {
    dir.join("config.json").is_file() || dir.join(crate::clip::open_clip::OPEN_CLIP_CONFIG).is_file()
}

/// The Hugging Face hub cache directory: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `~/.cache/huggingface/hub` (`$XDG_CACHE_HOME/huggingface/hub` when that is set), the order
/// `huggingface_hub` uses.
pub fn hf_hub_cache() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = var("HF_HUB_CACHE") {
        return Some(p);
    }
    if let Some(p) = var("HF_HOME") {
        return Some(p.join("hub"));
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return Some(p.join("huggingface").join("hub"));
    }
    var("HOME").map(|h| h.join(".cache").join("huggingface").join("hub"))
}

/// Resolves `spec` to a checkpoint directory, offline:
///
/// * `hf:org/name` or `hf:org/name@rev`: the snapshot in the HF hub cache
///   (`<cache>/models--org--name/snapshots/<rev>`; without `@rev` the revision named by
///   `refs/main`, else the only snapshot present).
/// * anything else: a local directory; if it does not exist and looks like `org/name`, the HF
///   cache is tried as above.
///
/// A directory is accepted when it contains `config.json` or `open_clip_config.json`. The error lists
/// every place tried.
pub fn resolve_checkpoint(spec: &str) -> Result<Checkpoint, ModelError> {
    resolve_checkpoint_in(spec, hf_hub_cache().as_deref())
}

/// [`resolve_checkpoint`] with an explicit hub cache directory (for tests).
pub fn resolve_checkpoint_in(spec: &str, hub_cache: Option<&Path>) -> Result<Checkpoint, ModelError> {
    let mut searched = Vec::new();
    let repo = if let Some(id) = spec.strip_prefix("hf:") {
        Some(id)
    } else {
        let local = PathBuf::from(spec);
        if has_model_config(&local) {
            return Ok(Checkpoint { dir: local });
        }
        searched.push(local);
        let looks_like_id = spec.split('/').count() == 2 && !spec.starts_with('.') && !spec.starts_with('/');
        looks_like_id.then_some(spec)
    };
    if let (Some(id), Some(cache)) = (repo, hub_cache) {
        let (name, rev) = match id.split_once('@') {
            Some((n, r)) => (n, Some(r)),
            None => (id, None),
        };
        let model_dir = cache.join(format!("models--{}", name.replace('/', "--")));
        let snapshots = model_dir.join("snapshots");
        let rev = match rev {
            Some(r) => {
                // A branch/tag name is resolved through refs/, a commit hash is used as is.
                std::fs::read_to_string(model_dir.join("refs").join(r))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| r.to_string())
            }
            None => match std::fs::read_to_string(model_dir.join("refs").join("main")) {
                Ok(s) => s.trim().to_string(),
                Err(_) => single_snapshot(&snapshots).unwrap_or_default(),
            },
        };
        let dir = snapshots.join(&rev);
        if !rev.is_empty() && has_model_config(&dir) {
            return Ok(Checkpoint { dir });
        }
        searched.push(if rev.is_empty() { snapshots } else { dir });
    }
    Err(ModelError::CheckpointNotFound { spec: spec.to_string(), searched })
}

fn single_snapshot(snapshots: &Path) -> Option<String> {
    let entries: Vec<_> = std::fs::read_dir(snapshots).ok()?.filter_map(Result::ok).collect();
    match entries.as_slice() {
        [one] => Some(one.file_name().to_string_lossy().into_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch_config(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("config.json"), "{}").unwrap();
    }

    #[test]
    fn local_directory_is_used_as_is() {
        let tmp = tempfile::tempdir().unwrap();
        touch_config(tmp.path());
        let ck = resolve_checkpoint_in(tmp.path().to_str().unwrap(), None).unwrap();
        assert_eq!(ck.dir, tmp.path());
    }

    #[test]
    fn hf_spec_follows_refs_main_and_explicit_revision() {
        let cache = tempfile::tempdir().unwrap();
        let model = cache.path().join("models--org--tiny-vit");
        touch_config(&model.join("snapshots").join("abc123"));
        touch_config(&model.join("snapshots").join("def456"));
        std::fs::create_dir_all(model.join("refs")).unwrap();
        std::fs::write(model.join("refs").join("main"), "abc123\n").unwrap();
        let ck = resolve_checkpoint_in("hf:org/tiny-vit", Some(cache.path())).unwrap();
        assert_eq!(ck.dir, model.join("snapshots").join("abc123"));
        let ck = resolve_checkpoint_in("hf:org/tiny-vit@def456", Some(cache.path())).unwrap();
        assert_eq!(ck.dir, model.join("snapshots").join("def456"));
        // A bare org/name that is not a local directory also falls back to the cache.
        let ck = resolve_checkpoint_in("org/tiny-vit", Some(cache.path())).unwrap();
        assert_eq!(ck.dir, model.join("snapshots").join("abc123"));
    }

    #[test]
    fn an_open_clip_directory_resolves() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("open_clip_config.json"), "{}").unwrap();
        let ck = resolve_checkpoint_in(tmp.path().to_str().unwrap(), None).unwrap();
        assert!(ck.is_open_clip());
        assert!(ck.model_files()[1].ends_with("open_clip_model.safetensors"));
    }

    #[test]
    fn missing_checkpoint_lists_places_searched() {
        let cache = tempfile::tempdir().unwrap();
        let err = resolve_checkpoint_in("hf:org/absent", Some(cache.path())).unwrap_err().to_string();
        assert!(err.contains("hf:org/absent"), "{err}");
        assert!(err.contains("models--org--absent"), "{err}");
    }
}
