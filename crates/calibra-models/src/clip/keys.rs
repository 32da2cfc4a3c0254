//! Key-remapping tables from Hugging Face CLIP checkpoints to the CLIP modules of this crate.
//!
//! transformers 4.x and 5.24 write the same names for `CLIPModel`
//! (`vision_model.*`, `text_model.*`, `visual_projection.weight`, `text_projection.weight`,
//! `logit_scale`). Vision-only checkpoints differ: 4.x `CLIPVisionModel` nests everything under
//! `vision_model.`, 5.x drops that prefix (transformers `conversion_mapping.py`:
//! `PrefixChange(prefix_to_remove="vision_model")`); both are accepted. Persistent `position_ids`
//! buffers written by old transformers versions are ignored.

use crate::error::ModelError;
use crate::hf::KeyMap;

/// Rules shared by both towers' transformer blocks: `{hf}encoder.layers.N.*` → `{burn}blocks.N.*`.
fn block_rules(mut map: KeyMap, hf: &str, burn: &str) -> Result<KeyMap, ModelError> {
    for (from, to) in [
        ("encoder.layers.{i}.self_attn.q_proj.", "blocks.{i}.attn.q_proj."),
        ("encoder.layers.{i}.self_attn.k_proj.", "blocks.{i}.attn.k_proj."),
        ("encoder.layers.{i}.self_attn.v_proj.", "blocks.{i}.attn.v_proj."),
        ("encoder.layers.{i}.self_attn.out_proj.", "blocks.{i}.attn.o_proj."),
        ("encoder.layers.{i}.layer_norm1.", "blocks.{i}.norm1."),
        ("encoder.layers.{i}.layer_norm2.", "blocks.{i}.norm2."),
        ("encoder.layers.{i}.mlp.fc1.", "blocks.{i}.mlp.fc1."),
        ("encoder.layers.{i}.mlp.fc2.", "blocks.{i}.mlp.fc2."),
    ] {
        map = map.rule(&format!("{hf}{from}"), &format!("{burn}{to}"))?;
    }
    Ok(map)
}

/// Rules of the CLIP vision tower, HF names under `hf`, module paths under `burn`.
pub fn vision_rules(map: KeyMap, hf: &str, burn: &str) -> Result<KeyMap, ModelError> {
    let mut map = block_rules(map, hf, burn)?;
    for (from, to) in [
        ("embeddings.class_embedding", "class_embedding"),
        ("embeddings.patch_embedding.", "patch_embedding.projection."),
        ("embeddings.position_embedding.", "position_embedding."),
        ("pre_layrnorm.", "pre_layernorm."),
        ("post_layernorm.", "post_layernorm."),
    ] {
        map = map.rule(&format!("{hf}{from}"), &format!("{burn}{to}"))?;
    }
    Ok(map)
}

/// Rules of the CLIP text tower, HF names under `hf`, module paths under `burn`.
pub fn text_rules(map: KeyMap, hf: &str, burn: &str) -> Result<KeyMap, ModelError> {
    let mut map = block_rules(map, hf, burn)?;
    for (from, to) in [
        ("embeddings.token_embedding.", "token_embedding."),
        ("embeddings.position_embedding.", "position_embedding."),
        ("final_layer_norm.", "final_layer_norm."),
    ] {
        map = map.rule(&format!("{hf}{from}"), &format!("{burn}{to}"))?;
    }
    Ok(map)
}

/// The table of a whole `CLIPModel` checkpoint loaded into [`super::ClipModel`]. `logit_scale` is
/// a 0-d tensor in the file and is read separately (see [`super::model::read_scalar`]).
pub fn clip_model_keymap() -> Result<KeyMap, ModelError> {
    let map = vision_rules(KeyMap::new("clip"), "vision_model.", "vision_model.")?;
    let map = text_rules(map, "text_model.", "text_model.")?;
    map.rule("visual_projection.", "visual_projection.")?
        .rule("text_projection.", "text_projection.")?
        .ignore(r"^logit_scale$")?
        .ignore(r"position_ids$")
}

/// The table of the vision tower alone ([`super::ClipVisionTransformer`]) from a `CLIPModel`,
/// `CLIPVisionModel` (4.x or 5.x names) or `CLIPVisionModelWithProjection` checkpoint: the text
/// tower, projections and logit scale are ignored.
pub fn clip_vision_keymap() -> Result<KeyMap, ModelError> {
    vision_rules(KeyMap::new("clip_vision_model").strip_prefix("vision_model."), "", "")?
        .ignore(r"^text_model\.")?
        .ignore(r"^(visual|text)_projection\.")?
        .ignore(r"^logit_scale$")?
        .ignore(r"position_ids$")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_names_map_to_module_paths_and_back() {
        let map = clip_model_keymap().unwrap();
        for (hf, burn) in [
            (
                "vision_model.encoder.layers.2.self_attn.out_proj.weight",
                "vision_model.blocks.2.attn.o_proj.base.weight",
            ),
            ("vision_model.pre_layrnorm.bias", "vision_model.pre_layernorm.bias"),
            ("vision_model.embeddings.class_embedding", "vision_model.class_embedding"),
            (
                "vision_model.embeddings.patch_embedding.weight",
                "vision_model.patch_embedding.projection.weight",
            ),
            ("text_model.embeddings.token_embedding.weight", "text_model.token_embedding.weight"),
            ("text_model.encoder.layers.0.layer_norm2.weight", "text_model.blocks.0.norm2.weight"),
            ("text_model.final_layer_norm.weight", "text_model.final_layer_norm.weight"),
            ("text_projection.weight", "text_projection.weight"),
        ] {
            assert_eq!(map.to_burn(hf), burn, "{hf}");
            assert_eq!(map.to_hf(burn), hf, "{burn}");
        }
        assert!(map.is_ignored("logit_scale"));
        assert!(map.is_ignored("text_model.embeddings.position_ids"));
    }

    #[test]
    fn vision_only_accepts_4x_and_5x_names() {
        let map = clip_vision_keymap().unwrap();
        let want = "blocks.1.mlp.fc1.base.weight";
        assert_eq!(map.to_burn("vision_model.encoder.layers.1.mlp.fc1.weight"), want);
        assert_eq!(map.to_burn("encoder.layers.1.mlp.fc1.weight"), want);
        assert!(map.is_ignored("text_model.encoder.layers.1.mlp.fc1.weight"));
        assert!(map.is_ignored("visual_projection.weight"));
    }
}
