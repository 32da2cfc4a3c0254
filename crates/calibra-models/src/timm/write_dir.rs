//! Writing a converted checkpoint in the Hugging Face layout timm writes (`config.json` with
//! `architecture`, `model_args`, `pretrained_cfg`, plus `model.safetensors`), all or nothing: staged,
//! loaded back as an [`crate::Encoder`], then renamed into place (see [`crate::hf::staged_dir`]).

use std::path::Path;

use burn::tensor::Device;
use serde_json::Value;

use crate::clip::open_clip::convert::{Owned, pt_format, serialize_tensors};
use crate::error::ModelError;
use crate::hf::staged_dir::publish_directory;
use crate::hf::torch_state_dict::invalid;

/// Writes `config` and `tensors` as a timm checkpoint directory `out` (which must not exist), once
/// they load as an encoder; `source` and `what` ("a RETFound ViT") name the origin in errors.
pub(crate) fn publish_timm_dir(
    out: &Path,
    config: &Value,
    tensors: &[(String, Owned)],
    source: &Path,
    what: &str,
) -> Result<(), ModelError> {
    let weights = serialize_tensors(tensors, pt_format(), &out.join("model.safetensors"))?;
    let text = serde_json::to_string_pretty(config).map_err(|e| ModelError::Input(e.to_string()))? + "\n";
    let files: [(&str, &[u8]); 2] = [("model.safetensors", &weights), ("config.json", text.as_bytes())];
    publish_directory(out, &files, |staged| {
        crate::Encoder::load_dir(staged, &Device::flex())
            .map(|_| ())
            .map_err(|e| invalid(source, format!("the converted checkpoint does not load as {what}: {e}")))
    })
}
