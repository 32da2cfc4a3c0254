//! `calibra convert`: checkpoints calibra cannot read as they are, into layouts it loads.
//! - `openai-clip FILE --out DIR`: an OpenAI CLIP state dict (`.pt`/`.pth`, CheXzero's release
//!   format) into a native OpenCLIP checkpoint directory (calibra_models::clip::open_clip::openai_pt);
//! - `vision-tower DIR --out DIR`: the SigLIP or CLIP vision tower of a multimodal checkpoint
//!   (MedGemma, PaliGemma, transformers' LLaVA) into a standalone one (calibra_models::hf::vision_tower);
//! - `retfound FILE --out DIR`: a RETFound MAE checkpoint into a timm ViT directory that computes
//!   RETFound's feature (calibra_models::timm::retfound);
//! - `panderm FILE --out DIR`: a PanDerm checkpoint (its own CAE-style ViT) into a timm ViT directory
//!   that computes PanDerm's linear-probing feature (calibra_models::timm::panderm);
//! - `biovil FILE --out DIR`: BioViL's image model (hi-ml-multimodal) into a timm ResNet directory
//!   (calibra_models::resnet::biovil).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use calibra_models::clip::open_clip::{Preprocess, convert_openai_clip};
use calibra_models::hf::torch_state_dict::SourceCheckpoint;
use calibra_models::hf::vision_tower::{PreprocessorNote, extract_vision_tower};
use calibra_models::resnet::biovil::{BIOVIL_CROP, BIOVIL_RESIZE, convert_biovil};
use calibra_models::timm::panderm::convert_panderm;
use calibra_models::timm::retfound::{FcNormSource, RetfoundPool, convert_retfound};
use calibra_models::timm::vit_checkpoint::VitShape;

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    #[command(subcommand)]
    pub kind: ConvertKind,
}

#[derive(Debug, clap::Subcommand)]
pub enum ConvertKind {
    /// An OpenAI CLIP state dict (`torch.save(model.state_dict())` of OpenAI's `clip.model.CLIP`,
    /// e.g. CheXzero's checkpoints) into an OpenCLIP directory (`open_clip_config.json` +
    /// `open_clip_model.safetensors`). The architecture is read off the tensor shapes as open_clip's
    /// `load_openai_model` reads it. ViT image towers only.
    OpenaiClip(OpenAiClipArgs),
    /// The vision tower of a multimodal Hugging Face checkpoint (MedGemma / Gemma 3, PaliGemma,
    /// transformers' LLaVA: `vision_config` a `siglip_vision_model` or `clip_vision_model`) into a
    /// standalone checkpoint directory of the tower's type; the language decoder is left out.
    VisionTower(VisionTowerArgs),
    /// A RETFound MAE checkpoint (`RETFound_cfp_weights.pth`, `RETFound_mae_natureCFP.pth`, or one
    /// fine-tuned with RETFound's code) into a timm ViT directory whose feature is RETFound's:
    /// `fc_norm` of the mean patch token (its default `--global_pool`), or the class token.
    Retfound(RetfoundArgs),
    /// A PanDerm checkpoint (`panderm_ll_data6_checkpoint-499.pth`, `panderm_bb_…`: PanDerm's own
    /// CAE-style ViT with q/v biases and LayerScale) into a timm ViT directory whose feature is
    /// PanDerm's linear-probing one (the class token after the final norm).
    Panderm(PandermArgs),
    /// BioViL's image model (`biovil_image_resnet50_proj_size_128.pt`, hi-ml-multimodal's
    /// `ImageModel` state dict) into a timm ResNet-50 directory whose feature is BioViL's image
    /// embedding, with BioViL's preprocessing (resize 512, centre crop 480, no normalisation).
    Biovil(BiovilArgs),
}

/// RETFound's feature (its `--global_pool` / `--cls_token` switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RetfoundPoolArg {
    /// `fc_norm` of the mean of the patch tokens (RETFound's default, `--global_pool`).
    Avg,
    /// The final `norm`, then the class token (`--cls_token`).
    Token,
}

#[derive(Debug, clap::Args)]
pub struct RetfoundArgs {
    #[command(flatten)]
    pub file: CheckpointFile,
    /// Attention heads (not stored in the checkpoint; default width / 64: 16 for RETFound's ViT-L).
    #[arg(long, value_name = "N")]
    pub num_heads: Option<usize>,
    /// The feature.
    #[arg(long, value_enum, default_value = "avg")]
    pub pool: RetfoundPoolArg,
}

#[derive(Debug, clap::Args)]
pub struct PandermArgs {
    #[command(flatten)]
    pub file: CheckpointFile,
    /// Attention heads (not stored in the checkpoint; default width / 64: 16 for PanDerm-Large, 12
    /// for PanDerm-Base).
    #[arg(long, value_name = "N")]
    pub num_heads: Option<usize>,
}

#[derive(Debug, clap::Args)]
pub struct BiovilArgs {
    #[command(flatten)]
    pub file: CheckpointFile,
}

/// A checkpoint file to convert, and where to write the result.
#[derive(Debug, clap::Args)]
pub struct CheckpointFile {
    /// The checkpoint file (`.pt` / `.pth`).
    #[arg(value_name = "FILE")]
    pub source: PathBuf,
    /// The checkpoint directory to write (must not exist).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The entry that holds the weights, in a checkpoint that nests them (default: the top level,
    /// else the entries this format's training scripts use, e.g. `state_dict` or `model`; a `module.`
    /// prefix on every name is removed either way).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct VisionTowerArgs {
    /// The multimodal checkpoint directory (`config.json`, `model.safetensors` or its shards with
    /// `model.safetensors.index.json`, `preprocessor_config.json`).
    #[arg(value_name = "DIR")]
    pub source: PathBuf,
    /// The checkpoint directory to write (must not exist).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Keep Gemma 3's multimodal projector (MedGemma): the feature becomes the mean of the image
    /// tokens at the decoder's input (CRS-Bench's MedGemma representation). Frozen features only.
    #[arg(long)]
    pub projector: bool,
}

/// The image normalisation written into `preprocess_cfg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PreprocessPreset {
    /// OpenAI CLIP's mean/std, bicubic resize of the shorter side, centre crop.
    Openai,
    /// CheXzero's chest X-ray statistics (mean 101.48761/255, std 83.43944/255), bicubic.
    Chexzero,
}

#[derive(Debug, clap::Args)]
pub struct OpenAiClipArgs {
    #[command(flatten)]
    pub file: CheckpointFile,
    /// The image preprocessing to record with the model.
    #[arg(long, value_enum, default_value = "openai")]
    pub preprocess: PreprocessPreset,
    /// Override the mean: three comma-separated numbers in 0–1 pixel units (R,G,B).
    #[arg(long, value_name = "R,G,B")]
    pub mean: Option<String>,
    /// Override the standard deviation: three positive comma-separated numbers in 0–1 pixel units.
    #[arg(long, value_name = "R,G,B")]
    pub std: Option<String>,
}

fn three_numbers(flag: &str, text: &str, positive: bool) -> Result<[f64; 3]> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let [r, g, b] = parts[..] else { bail!("--{flag}: expected 3 comma-separated numbers, found `{text}`") };
    let mut out = [0.0; 3];
    for (slot, part) in out.iter_mut().zip([r, g, b]) {
        let v: f64 = part.parse().with_context(|| format!("--{flag}: `{part}` is not a number"))?;
        if !v.is_finite() || (positive && v <= 0.0) {
            bail!("--{flag}: `{part}` must be finite{}", if positive { " and positive" } else { "" });
        }
        *slot = v;
    }
    Ok(out)
}

pub fn run(args: &ConvertArgs) -> Result<()> {
    match &args.kind {
        ConvertKind::OpenaiClip(a) => openai_clip(a),
        ConvertKind::VisionTower(a) => vision_tower(a),
        ConvertKind::Retfound(a) => retfound(a),
        ConvertKind::Panderm(a) => panderm(a),
        ConvertKind::Biovil(a) => biovil(a),
    }
}

fn print_source(path: &std::path::Path, source: &SourceCheckpoint) {
    println!("  source: {} (sha256 {})", path.display(), source.sha256);
    if let Some(entry) = &source.entry {
        println!("  weights read from the entry '{entry}'");
    }
    if let Some(prefix) = &source.stripped_prefix {
        println!("  prefix '{prefix}' removed from every name");
    }
}

fn print_dropped(dropped: &std::collections::BTreeMap<&'static str, usize>) {
    for (group, n) in dropped {
        println!("  dropped: {group} ({n} tensors)");
    }
}

/// The architecture line of a converted ViT (`defaulted`: the head count is width / 64).
fn print_vit(kind: &str, shape: &VitShape, heads: usize, defaulted: bool, extra: &str, parameters: u64) {
    println!(
        "  architecture: {kind}, {} px, patch {}, width {}, depth {}, {heads} heads{}, MLP {}{extra}; \
         {parameters} parameters",
        shape.img_size(),
        shape.patch,
        shape.embed_dim,
        shape.depth,
        if defaulted { " (width / 64)" } else { "" },
        shape.mlp_hidden,
    );
}

fn retfound(a: &RetfoundArgs) -> Result<()> {
    let pool = match a.pool {
        RetfoundPoolArg::Avg => RetfoundPool::Avg,
        RetfoundPoolArg::Token => RetfoundPool::Token,
    };
    eprintln!("reading {} ...", a.file.source.display());
    let done = convert_retfound(&a.file.source, &a.file.out, a.file.key.as_deref(), a.num_heads, pool)?;
    println!("wrote {} (a timm ViT checkpoint directory)", done.out.display());
    print_source(&a.file.source, &done.source);
    let extra = format!(", qkv bias {}", done.qkv_bias);
    print_vit("ViT", &done.shape, done.num_heads, a.num_heads.is_none(), &extra, done.parameters);
    match done.fc_norm {
        Some(FcNormSource::FreshInit) => println!(
            "  feature: fc_norm(mean of the patch tokens), fc_norm freshly initialised (weight 1, bias 0) as \
             RETFound builds it for a pre-trained checkpoint"
        ),
        Some(FcNormSource::Checkpoint) => {
            println!("  feature: fc_norm(mean of the patch tokens), the checkpoint's own fc_norm")
        }
        None => println!("  feature: the class token after the final norm"),
    }
    print_dropped(&done.dropped);
    println!(
        "  preprocess: bicubic resize, centre crop {} px, ImageNet mean/std (RETFound's eval transform)",
        done.shape.img_size()
    );
    println!("use it as --encoder {} (features, train: probes, LoRA, full)", done.out.display());
    Ok(())
}

fn panderm(a: &PandermArgs) -> Result<()> {
    eprintln!("reading {} ...", a.file.source.display());
    let done = convert_panderm(&a.file.source, &a.file.out, a.file.key.as_deref(), a.num_heads)?;
    println!("wrote {} (a timm ViT checkpoint directory)", done.out.display());
    print_source(&a.file.source, &done.source);
    print_vit("ViT with LayerScale", &done.shape, done.num_heads, a.num_heads.is_none(), "", done.parameters);
    println!("  feature: the class token after the final norm (PanDerm's linear probe)");
    if done.pos_embed_computed {
        println!("  pos_embed: not in the checkpoint; PanDerm's fixed sin-cos table for 224 px computed");
    }
    if done.ignored > 0 {
        println!(
            "  ignored, as PanDerm's strict=False load ignores them: {} name(s) its ViT does not have (e.g. {})",
            done.ignored, done.ignored_sample
        );
    }
    println!(
        "  preprocess: bilinear resize to 256, centre crop 224, mean {:?}, std {:?} (PanDerm's eval transform)",
        calibra_models::timm::panderm::PANDERM_MEAN,
        calibra_models::timm::panderm::PANDERM_STD
    );
    println!("use it as --encoder {} (features, train: probes, LoRA, full)", done.out.display());
    Ok(())
}

fn biovil(a: &BiovilArgs) -> Result<()> {
    eprintln!("reading {} ...", a.file.source.display());
    let done = convert_biovil(&a.file.source, &a.file.out, a.file.key.as_deref())?;
    println!("wrote {} (a timm ResNet checkpoint directory)", done.out.display());
    print_source(&a.file.source, &done.source);
    println!(
        "  architecture: {} layout, stage depths {:?}, widths {:?}; feature width {}; {} parameters",
        done.architecture, done.depths, done.channels, done.features, done.parameters
    );
    print_dropped(&done.dropped);
    println!(
        "  preprocess: bilinear resize of the shorter side to {BIOVIL_RESIZE}, centre crop {BIOVIL_CROP}, pixels \
         in 0-1 (no normalisation), as hi-ml's BioViL inference transform; hi-ml's loader also makes each \
         image grayscale and stretches it to 0-255, which calibra does not: give 8-bit grayscale images"
    );
    println!("use it as --encoder {} (features, train: probes, full)", done.out.display());
    Ok(())
}

fn vision_tower(a: &VisionTowerArgs) -> Result<()> {
    eprintln!("reading {} ...", a.source.display());
    let done = extract_vision_tower(&a.source, &a.out, a.projector)?;
    println!("wrote {} (a {} checkpoint directory)", done.out.display(), done.tower_model_type);
    println!(
        "  from the {} checkpoint {}: {} tensors ({} parameters) under '{}', read from {} weight file(s)",
        done.source_model_type,
        a.source.display(),
        done.tensors,
        done.parameters,
        done.prefix,
        done.files_read
    );
    match done.preprocessor {
        PreprocessorNote::Copied => println!("  preprocessor_config.json copied"),
        PreprocessorNote::PanAndScanDropped => println!(
            "  preprocessor_config.json copied without do_pan_and_scan (the tower is fed one resized image; \
             pan-and-scan crops are Gemma 3's extra views for the decoder)"
        ),
        PreprocessorNote::Missing => println!(
            "  note: the checkpoint has no preprocessor_config.json; add the tower's own before `calibra features`"
        ),
    }
    match &done.projector {
        Some(p) => {
            println!(
                "  with Gemma 3's multimodal projector: the feature is the mean of the {} projected image \
                 tokens, {} wide (the input of the language decoder)",
                p.mm_tokens_per_image, p.text_hidden_size
            );
            println!(
                "use it as --encoder {} (features and probes; fine-tuning needs the tower without --projector)",
                done.out.display()
            );
        }
        None => println!("use it as --encoder {} (features, train: probes, LoRA, full)", done.out.display()),
    }
    Ok(())
}

fn openai_clip(a: &OpenAiClipArgs) -> Result<()> {
    let mut preprocess = match a.preprocess {
        PreprocessPreset::Openai => Preprocess::openai(),
        PreprocessPreset::Chexzero => Preprocess::chexzero(),
    };
    if let Some(text) = &a.mean {
        preprocess.mean = three_numbers("mean", text, false)?;
    }
    if let Some(text) = &a.std {
        preprocess.std = three_numbers("std", text, true)?;
    }
    eprintln!("reading {} ...", a.file.source.display());
    let done = convert_openai_clip(&a.file.source, &a.file.out, a.file.key.as_deref(), &preprocess)?;
    println!("wrote {} (an OpenCLIP checkpoint directory)", done.out.display());
    print_source(&a.file.source, &done.source);
    println!("  architecture: {}", done.architecture());
    let dtypes: Vec<String> = done.dtypes.iter().map(|(t, n)| format!("{n} {t}")).collect();
    println!("  {} parameters in {} tensors, stored as read", done.parameters, dtypes.join(" + "));
    if !done.dropped.is_empty() {
        println!("  integer entries checked against the shapes and dropped: {}", done.dropped.join(", "));
    }
    println!(
        "  preprocess: mean {:?}, std {:?}, {} resize ({})",
        preprocess.mean, preprocess.std, preprocess.interpolation, preprocess.resize_mode
    );
    println!("use it as --encoder {} (features, zero-shot, train --regime coop)", done.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_numbers_are_checked() {
        assert_eq!(three_numbers("mean", "0.1, 0.2,0.3", false).unwrap(), [0.1, 0.2, 0.3]);
        assert!(
            three_numbers("mean", "0.1,0.2", false).unwrap_err().to_string().contains("3 comma-separated")
        );
        assert!(three_numbers("std", "0.1,0,0.3", true).unwrap_err().to_string().contains("positive"));
        assert!(three_numbers("std", "0.1,x,0.3", true).unwrap_err().to_string().contains("`x`"));
        assert!(three_numbers("mean", "0.1,NaN,0.3", false).unwrap_err().to_string().contains("finite"));
    }
}
