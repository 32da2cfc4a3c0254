//! The PEFT module names of every family's LoRA-capable linears.
//!
//! All families share [`TransformerBlock`], whose q/k/v/o projections and MLP `fc1`/`fc2` are
//! [`LoraLinear`]s; what differs is only the path transformers gives them. Each family has one
//! canonical spelling, the module path PEFT writes for the model a user fine-tunes a classifier
//! with (`<Family>ForImageClassification`; `CLIPModel` for the CLIP text tower), checked by
//! instantiating the transformers 5.24 models (scripts/golden/lora_peft_families.py):
//!
//! | family | canonical name of block `i` (`<o>` = attention output) | other spellings accepted on read |
//! |---|---|---|
//! | ViT / DeiT | `vit.layers.{i}.attention.{q,k,v,o}_proj`, `vit.layers.{i}.mlp.fc{1,2}` (`deit.` for DeiT) | 4.x `vit.encoder.layer.{i}.attention.attention.query`, `….attention.output.dense`, `….intermediate.dense`, `….output.dense` |
//! | DINOv2 | `dinov2.encoder.layer.{i}.attention.{q,k,v,o}_proj`, `….mlp.fc{1,2}` (`dinov2_with_registers.` with registers) | `Dinov2Model`'s `encoder.layer.{i}.…`; 4.x `….attention.attention.{query,key,value}`, `….attention.output.dense` |
//! | CLIP vision | `vision_model.encoder.layers.{i}.self_attn.{q,k,v,out}_proj`, `….mlp.fc{1,2}` | `CLIPVisionModel`'s `encoder.layers.{i}.…` |
//! | CLIP text (in [`ClipModel`]) | `text_model.encoder.layers.{i}.self_attn.{q,k,v,out}_proj`, `….mlp.fc{1,2}` | — |
//! | SigLIP vision | `vision_model.encoder.layers.{i}.self_attn.…` as CLIP, and the pooling head's MLP `vision_model.head.mlp.fc{1,2}` | `SiglipVisionModel`'s `encoder.layers.{i}.…`, `head.mlp.fc{1,2}` |
//! | timm ViT (`timm.create_model`) | `blocks.{i}.attn.qkv` (fused, see below), `blocks.{i}.attn.proj`, `blocks.{i}.mlp.fc{1,2}` | — |
//!
//! timm's `attn.qkv` is one Linear `d → 3·d`, which PEFT adapts with one `lora_A` `[r, d]` and one
//! `lora_B` `[3·d, r]`. calibra loads it split into q/k/v projections and puts that one branch on
//! the attention ([`FusedQkv`]), its output split into the q, k and v parts, so the trained
//! parameters, the saved tensors and their names are PEFT's. timm's classifier `head` is not part of
//! the encoder: it is trained whole and saved as `modules_to_save = ["head"]`.
//!
//! Modules PEFT would also see but calibra cannot wrap are listed by [`LoraModel::lora_refused`] so a
//! target that reaches them is refused instead of silently skipped: SigLIP's pooling-head attention
//! (`torch.nn.MultiheadAttention`; PEFT's special LoRA for it merges into the packed `in_proj` and is
//! not implemented here, and its `out_proj` is a Linear whose `forward` MHA never calls, so a branch
//! on it would do nothing), CLIP's `visual_projection` / `text_projection`, timm's `patch_embed.proj`
//! (a Conv2d) and `head`, and the attention / MLP containers (not Linears; PEFT refuses them too).
//!
//! LoRA on a native OpenCLIP checkpoint (loaded as a CLIP vision tower) is refused as a whole: see
//! `open_clip_lora_refused`.

use std::sync::OnceLock;

use burn::module::Module;
use regex::Regex;

use super::LoraError;
use super::slot::{FusedQkv, LoraSlot};
use crate::clip::ClipModel;
use crate::encoder::{Encoder, EncoderModel};
use crate::layers::TransformerBlock;
use crate::timm::TimmVit;

/// A model whose LoRA-capable linears are known by their PEFT module names.
pub trait LoraModel: Module {
    /// Every LoRA-capable linear with its canonical PEFT name, in a fixed order (timm's fused
    /// `attn.qkv` as one [`LoraSlot::FusedQkv`]).
    fn lora_linears(&mut self) -> Result<Vec<(String, LoraSlot<'_>)>, LoraError>;

    /// Modules PEFT sees in the transformers model that calibra cannot wrap, each with the reason.
    fn lora_refused(&self) -> Result<Vec<(String, String)>, LoraError>;

    /// The canonical name of a module named in another known spelling (transformers 4.x, the
    /// standalone `*Model` class); other names are returned unchanged.
    fn canonical_name(&self, name: &str) -> Result<String, LoraError>;
}

/// How one family names the parts of a [`TransformerBlock`].
struct BlockNames {
    /// The path of block `i` is `{layers}.{i}`.
    layers: String,
    /// Attention container (`attention` / `self_attn`).
    attn: &'static str,
    /// Attention output projection (`o_proj` / `out_proj`).
    out: &'static str,
}

impl BlockNames {
    fn push<'a>(&self, out: &mut Vec<(String, LoraSlot<'a>)>, blocks: &'a mut [TransformerBlock]) {
        for (i, block) in blocks.iter_mut().enumerate() {
            let base = format!("{}.{i}", self.layers);
            let (attn, mlp) = (&mut block.attn, &mut block.mlp);
            out.push((format!("{base}.{}.q_proj", self.attn), LoraSlot::Linear(&mut attn.q_proj)));
            out.push((format!("{base}.{}.k_proj", self.attn), LoraSlot::Linear(&mut attn.k_proj)));
            out.push((format!("{base}.{}.v_proj", self.attn), LoraSlot::Linear(&mut attn.v_proj)));
            out.push((format!("{base}.{}.{}", self.attn, self.out), LoraSlot::Linear(&mut attn.o_proj)));
            out.push((format!("{base}.mlp.fc1"), LoraSlot::Linear(&mut mlp.fc1)));
            out.push((format!("{base}.mlp.fc2"), LoraSlot::Linear(&mut mlp.fc2)));
        }
    }

    fn containers(&self, n_blocks: usize, out: &mut Vec<(String, String)>) {
        for i in 0..n_blocks {
            let base = format!("{}.{i}", self.layers);
            for part in [self.attn, "mlp"] {
                out.push((
                    format!("{base}.{part}"),
                    "a container of linears, not a Linear (PEFT refuses it too); target its projections"
                        .into(),
                ));
            }
        }
    }
}

/// The encoder's family prefix for ViT/DeiT and DINOv2 names (`model_type`).
fn model_type(encoder: &Encoder) -> Result<String, LoraError> {
    encoder
        .config
        .model_type()
        .map_err(|e| LoraError::Config { field: "model_type".into(), why: e.to_string() })
}

/// LoRA on a ResNet is refused: its layers are convolutions, and PEFT's LoRA for `nn.Conv2d` (a
/// `lora_A` convolution of the original kernel size and stride, a 1x1 `lora_B`) is not implemented
/// here; only LoRA on Linear layers is.
fn resnet_lora_refused() -> LoraError {
    LoraError::Config {
        field: "target_modules".into(),
        why: "LoRA on a ResNet is not implemented: its layers are convolutions and PEFT's Conv2d LoRA \
              is not implemented here (only Linear layers); fine-tune it with the `full` regime, or use \
              the frozen encoder (features / probes)"
            .into(),
    }
}

/// LoRA on a native OpenCLIP vision tower is refused: PEFT 0.21.2 sees OpenCLIP's own module
/// names, and its attention is a `torch.nn.MultiheadAttention`, which PEFT wraps with its special
/// `lora.MultiheadAttention` (one branch merged into the packed `in_proj_weight` `[3·d, d]`, one on
/// `out_proj`, always both), while calibra splits `in_proj` into q/k/v at load. Adapters under the
/// Hugging Face names calibra uses inside could not be loaded by a PEFT user of the OpenCLIP model.
/// The message lists what runs on the checkpoint and where LoRA does.
fn open_clip_lora_refused() -> LoraError {
    LoraError::Config {
        field: "target_modules".into(),
        why: "LoRA on an OpenCLIP checkpoint (open_clip_config.json) is not implemented yet: PEFT names \
              its modules `visual.transformer.resblocks.{i}.attn` (a torch nn.MultiheadAttention, which \
              PEFT adapts as a whole: one branch merged into the packed in_proj plus one on out_proj) \
              and `visual.transformer.resblocks.{i}.mlp.c_fc` / `.mlp.c_proj` (Linears), while calibra \
              splits in_proj into q/k/v at load. What works on it: the frozen encoder (features / \
              probes), zero-shot and CoOp. LoRA works on the Hugging Face layouts (ViT / DeiT / ViT-MAE, \
              DINOv2, CLIP, SigLIP: convert these weights to the Hugging Face CLIP layout) and on timm \
              ViT checkpoints (timm's Hugging Face layout)"
            .into(),
    }
}

fn encoder_block_names(encoder: &Encoder) -> Result<BlockNames, LoraError> {
    if encoder.is_open_clip() {
        return Err(open_clip_lora_refused());
    }
    Ok(match &encoder.model {
        EncoderModel::Vit(_) => {
            let prefix = if model_type(encoder)? == "deit" { "deit" } else { "vit" };
            BlockNames { layers: format!("{prefix}.layers"), attn: "attention", out: "o_proj" }
        }
        EncoderModel::Dinov2(_) => {
            let prefix = if model_type(encoder)? == "dinov2_with_registers" {
                "dinov2_with_registers"
            } else {
                "dinov2"
            };
            BlockNames { layers: format!("{prefix}.encoder.layer"), attn: "attention", out: "o_proj" }
        }
        EncoderModel::ClipVision(_) | EncoderModel::SiglipVision(_) => {
            BlockNames { layers: "vision_model.encoder.layers".into(), attn: "self_attn", out: "out_proj" }
        }
        // The containers' names; timm's linears are listed by `timm_push` (its qkv is fused).
        EncoderModel::TimmVit(_) => BlockNames { layers: "blocks".into(), attn: "attn", out: "proj" },
        EncoderModel::ResNet(_) => return Err(resnet_lora_refused()),
    })
}

/// timm's PEFT names (`timm.create_model(...)`'s module paths): block `i`'s fused `attn.qkv`, its
/// `attn.proj` and `mlp.fc{1,2}`.
fn timm_push<'a>(out: &mut Vec<(String, LoraSlot<'a>)>, model: &'a mut TimmVit) {
    for (i, block) in model.blocks.iter_mut().enumerate() {
        let (qkv, proj) = FusedQkv::of(&mut block.attn);
        out.push((format!("blocks.{i}.attn.qkv"), LoraSlot::FusedQkv(qkv)));
        out.push((format!("blocks.{i}.attn.proj"), LoraSlot::Linear(proj)));
        out.push((format!("blocks.{i}.mlp.fc1"), LoraSlot::Linear(&mut block.mlp.fc1)));
        out.push((format!("blocks.{i}.mlp.fc2"), LoraSlot::Linear(&mut block.mlp.fc2)));
    }
}

/// Modules of a timm ViT that PEFT would wrap but calibra does not.
fn timm_refused(out: &mut Vec<(String, String)>) {
    out.push((
        "patch_embed.proj".into(),
        "timm's patch embedding is a Conv2d, and PEFT's Conv2d LoRA is not implemented here; name the \
         attention projection `attn.proj` (not `proj`) or add `patch_embed.proj` to exclude_modules"
            .into(),
    ));
    out.push((
        "head".into(),
        "timm's classifier is not part of the encoder: train it whole with modules_to_save = [\"head\"] \
         (as calibra's LoRA regime does), not with a LoRA branch"
            .into(),
    ));
}

impl LoraModel for Encoder {
    fn lora_linears(&mut self) -> Result<Vec<(String, LoraSlot<'_>)>, LoraError> {
        let names = encoder_block_names(self)?;
        let mut out = Vec::new();
        // family dispatch
        match &mut self.model {
            EncoderModel::Vit(m) => names.push(&mut out, &mut m.blocks),
            EncoderModel::Dinov2(m) => names.push(&mut out, &mut m.blocks),
            EncoderModel::ClipVision(m) => names.push(&mut out, &mut m.blocks),
            EncoderModel::SiglipVision(m) => {
                names.push(&mut out, &mut m.blocks);
                if let Some(head) = &mut m.head {
                    out.push(("vision_model.head.mlp.fc1".into(), LoraSlot::Linear(&mut head.mlp.fc1)));
                    out.push(("vision_model.head.mlp.fc2".into(), LoraSlot::Linear(&mut head.mlp.fc2)));
                }
            }
            EncoderModel::TimmVit(m) => timm_push(&mut out, m),
            // encoder_block_names above has refused a ResNet already.
            EncoderModel::ResNet(_) => {}
        }
        Ok(out)
    }

    fn lora_refused(&self) -> Result<Vec<(String, String)>, LoraError> {
        let mut out = Vec::new();
        let names = encoder_block_names(self)?;
        names.containers(self.num_layers(), &mut out);
        if let EncoderModel::TimmVit(_) = &self.model {
            timm_refused(&mut out);
        }
        if let EncoderModel::SiglipVision(m) = &self.model
            && m.head.is_some()
        {
            out.push((
                "vision_model.head.attention".into(),
                "SigLIP's pooling-head attention is a torch nn.MultiheadAttention; PEFT's LoRA for it \
                 (one branch merged into the packed in_proj plus one on out_proj) is not implemented here"
                    .into(),
            ));
            out.push((
                "vision_model.head.attention.out_proj".into(),
                "the out_proj of SigLIP's pooling-head nn.MultiheadAttention: PEFT wraps it, but \
                 nn.MultiheadAttention never calls its forward, so the branch would have no effect; \
                 add `head.attention.out_proj` to exclude_modules or target `self_attn.out_proj`"
                    .into(),
            ));
            out.push((
                "vision_model.head.mlp".into(),
                "a container of linears, not a Linear (PEFT refuses it too); target `fc1` / `fc2`".into(),
            ));
        }
        Ok(out)
    }

    fn canonical_name(&self, name: &str) -> Result<String, LoraError> {
        // family dispatch
        Ok(match &self.model {
            EncoderModel::Vit(_) => v4_to_v5(name),
            EncoderModel::Dinov2(_) => {
                let prefix = if model_type(self)? == "dinov2_with_registers" {
                    "dinov2_with_registers"
                } else {
                    "dinov2"
                };
                dinov2_canonical(prefix, name)
            }
            EncoderModel::ClipVision(_) if self.is_open_clip() => return Err(open_clip_lora_refused()),
            EncoderModel::ClipVision(_) | EncoderModel::SiglipVision(_) => {
                if name.starts_with("encoder.layers.") || name.starts_with("head.") {
                    format!("vision_model.{name}")
                } else {
                    name.to_string()
                }
            }
            // timm's module names have one spelling.
            EncoderModel::TimmVit(_) => name.to_string(),
            EncoderModel::ResNet(_) => return Err(resnet_lora_refused()),
        })
    }
}

impl LoraModel for ClipModel {
    fn lora_linears(&mut self) -> Result<Vec<(String, LoraSlot<'_>)>, LoraError> {
        let mut out = Vec::new();
        clip_tower("vision_model").push(&mut out, &mut self.vision_model.blocks);
        clip_tower("text_model").push(&mut out, &mut self.text_model.blocks);
        Ok(out)
    }

    fn lora_refused(&self) -> Result<Vec<(String, String)>, LoraError> {
        let mut out = Vec::new();
        clip_tower("vision_model").containers(self.vision_model.blocks.len(), &mut out);
        clip_tower("text_model").containers(self.text_model.blocks.len(), &mut out);
        for p in ["visual_projection", "text_projection"] {
            out.push((p.into(), "CLIP's projections are plain linears here, not LoRA-capable".into()));
        }
        Ok(out)
    }

    fn canonical_name(&self, name: &str) -> Result<String, LoraError> {
        // Both towers' standalone models name their blocks `encoder.layers.{i}`, which is ambiguous in
        // the joint model: only the CLIPModel spelling is accepted.
        Ok(name.to_string())
    }
}

fn clip_tower(prefix: &str) -> BlockNames {
    BlockNames { layers: format!("{prefix}.encoder.layers"), attn: "self_attn", out: "out_proj" }
}

fn compiled(table: &[(&str, &'static str)]) -> Vec<(Regex, &'static str)> {
    table.iter().map(|(p, r)| (Regex::new(p).expect("static regex"), *r)).collect()
}

fn rewrite(table: &[(Regex, &'static str)], name: &str) -> String {
    for (re, rep) in table {
        if re.is_match(name) {
            return re.replace(name, *rep).into_owned();
        }
    }
    name.to_string()
}

/// transformers 4.x ViT names → 5.x names (layer index kept).
pub(super) fn v4_to_v5(name: &str) -> String {
    static TABLE: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        compiled(&[
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.attention\.query$", "$1.layers.$2.attention.q_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.attention\.key$", "$1.layers.$2.attention.k_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.attention\.value$", "$1.layers.$2.attention.v_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.output\.dense$", "$1.layers.$2.attention.o_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.intermediate\.dense$", "$1.layers.$2.mlp.fc1"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.output\.dense$", "$1.layers.$2.mlp.fc2"),
        ])
    });
    rewrite(table, name)
}

/// DINOv2 names (standalone `Dinov2Model`, transformers 4.x) → `{prefix}.encoder.layer.{i}.…` 5.x names.
fn dinov2_canonical(prefix: &str, name: &str) -> String {
    static TABLE: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        compiled(&[
            (
                r"^(.*\.)?encoder\.layer\.(\d+)\.attention\.attention\.query$",
                "encoder.layer.$2.attention.q_proj",
            ),
            (
                r"^(.*\.)?encoder\.layer\.(\d+)\.attention\.attention\.key$",
                "encoder.layer.$2.attention.k_proj",
            ),
            (
                r"^(.*\.)?encoder\.layer\.(\d+)\.attention\.attention\.value$",
                "encoder.layer.$2.attention.v_proj",
            ),
            (
                r"^(.*\.)?encoder\.layer\.(\d+)\.attention\.output\.dense$",
                "encoder.layer.$2.attention.o_proj",
            ),
            (r"^(.*\.)?encoder\.layer\.(\d+)\.(attention\.[qkvo]_proj|mlp\.fc[12])$", "encoder.layer.$2.$3"),
        ])
    });
    // Only names under the family's own prefix (or none: the standalone model) are this model's.
    let rest = match name.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) {
        Some(rest) => rest,
        None if name.starts_with("encoder.") => name,
        None => return name.to_string(),
    };
    let rewritten = rewrite(table, rest);
    if rewritten == rest && rest != name { name.to_string() } else { format!("{prefix}.{rewritten}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dinov2_spellings_map_onto_the_classification_names() {
        let p = "dinov2";
        for (from, to) in [
            ("encoder.layer.1.attention.q_proj", "dinov2.encoder.layer.1.attention.q_proj"),
            ("encoder.layer.0.mlp.fc2", "dinov2.encoder.layer.0.mlp.fc2"),
            ("dinov2.encoder.layer.1.attention.attention.value", "dinov2.encoder.layer.1.attention.v_proj"),
            ("dinov2.encoder.layer.1.attention.output.dense", "dinov2.encoder.layer.1.attention.o_proj"),
            ("encoder.layer.3.attention.attention.key", "dinov2.encoder.layer.3.attention.k_proj"),
            ("dinov2.encoder.layer.1.attention.q_proj", "dinov2.encoder.layer.1.attention.q_proj"),
            ("vit.layers.0.attention.q_proj", "vit.layers.0.attention.q_proj"),
        ] {
            assert_eq!(dinov2_canonical(p, from), to, "{from}");
        }
        assert_eq!(
            dinov2_canonical("dinov2_with_registers", "encoder.layer.1.mlp.fc1"),
            "dinov2_with_registers.encoder.layer.1.mlp.fc1"
        );
    }
}
