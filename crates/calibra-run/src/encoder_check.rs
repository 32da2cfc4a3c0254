//! Up-front checks of a recipe's encoders (part of recipe validation with path checks on, i.e. `calibra
//! run` and `--dry-run` without `--no-check-paths`): everything about an encoder that can be known
//! without loading its weights.
//!
//! For every encoder some fit reads (any regime except a frozen regime whose only probe is `prior`):
//! - a local source must be a directory holding `config.json` (a file, or a directory without it, is
//!   named as such);
//! - an `hf:org/model[@rev]` id must be in the local Hugging Face cache (`$HF_HUB_CACHE`, else
//!   `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`), resolved
//!   as the `calibra` binary resolves it (offline: `refs/<rev>`, else the only snapshot);
//! - its `config.json` `model_type` must suit every regime that runs on it: zero-shot, CoOp, KgCoOp and
//!   ProGrad, MaPLe, PromptSRC and HiCroPL need a CLIP or SigLIP checkpoint
//!   ([`names::ZERO_SHOT_MODEL_TYPES`], [`names::COOP_MODEL_TYPES`]),
//!   LoRA a family calibra can inject adapters into ([`names::LORA_MODEL_TYPES`]), with `targets`
//!   that wrap at least one of its projections ([`names::lora_targets_match`]: `query`/`value` match
//!   nothing in a timm ViT, whose attention is one fused `qkv`).
//!
//! This crate does not depend on burn: it reads `config.json` as plain JSON. The resolution mirrors
//! `calibra_models::hf::resolve` (the binary's tests keep the two in step).

use std::path::{Path, PathBuf};

use crate::locate::KeyPath;
use crate::names;
use crate::recipe::{EncoderEntry, Recipe};

/// The Hugging Face hub cache directory (see the module docs), if any variable names one.
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

/// The checkpoint directory of an encoder source, offline; the error says what is wrong and where it
/// looked.
pub fn resolve_encoder(source: &str, hub_cache: Option<&Path>) -> Result<PathBuf, String> {
    let Some(id) = source.strip_prefix("hf:") else {
        let dir = PathBuf::from(source);
        return if dir.is_file() {
            Err(format!(
                "`{source}` is a file; an encoder is a checkpoint directory holding config.json and \
                 model.safetensors (Hugging Face layout)"
            ))
        } else if !dir.exists() {
            Err(format!("local encoder `{source}` does not exist"))
        } else if !has_config(&dir) {
            Err(format!(
                "local encoder directory `{source}` has no config.json (expected a checkpoint directory in \
                 Hugging Face layout: config.json and model.safetensors; or OpenCLIP's \
                 open_clip_config.json and open_clip_model.safetensors)"
            ))
        } else {
            Ok(dir)
        };
    };
    let (name, rev) = match id.split_once('@') {
        Some((n, r)) => (n, Some(r)),
        None => (id, None),
    };
    let Some(cache) = hub_cache else {
        return Err(format!(
            "`{source}` cannot be looked up: no Hugging Face cache directory (set HF_HUB_CACHE or HF_HOME)"
        ));
    };
    let model_dir = cache.join(format!("models--{}", name.replace('/', "--")));
    let snapshots = model_dir.join("snapshots");
    let rev = match rev {
        Some(r) => std::fs::read_to_string(model_dir.join("refs").join(r))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| r.to_string()),
        None => match std::fs::read_to_string(model_dir.join("refs").join("main")) {
            Ok(s) => s.trim().to_string(),
            Err(_) => single_snapshot(&snapshots).unwrap_or_default(),
        },
    };
    let dir = snapshots.join(&rev);
    if !rev.is_empty() && has_config(&dir) {
        return Ok(dir);
    }
    Err(format!(
        "`{source}` is not in the local Hugging Face cache (looked in {}); download it first (e.g. \
         `huggingface-cli download {name}`), or pass --no-check-paths",
        if rev.is_empty() { snapshots } else { dir }.display()
    ))
}

fn single_snapshot(snapshots: &Path) -> Option<String> {
    let entries: Vec<_> = std::fs::read_dir(snapshots).ok()?.filter_map(Result::ok).collect();
    match entries.as_slice() {
        [one] => Some(one.file_name().to_string_lossy().into_owned()),
        _ => None,
    }
}

/// Whether `dir` holds `config.json` or OpenCLIP's `open_clip_config.json`.
fn has_config(dir: &Path) -> bool {
    dir.join("config.json").is_file() || dir.join(OPEN_CLIP_CONFIG).is_file()
}

/// OpenCLIP's hub config file name.
const OPEN_CLIP_CONFIG: &str = "open_clip_config.json";

/// `model_type` of `<dir>/config.json`; [`names::OPEN_CLIP_MODEL_TYPE`] for a native OpenCLIP
/// checkpoint (`open_clip_config.json` and no `config.json`); [`names::TIMM_VIT_MODEL_TYPE`] /
/// [`names::TIMM_RESNET_MODEL_TYPE`] for timm's layout (`architecture`, no `model_type`).
pub fn model_type(dir: &Path) -> Result<String, String> {
    if !dir.join("config.json").is_file() && dir.join(OPEN_CLIP_CONFIG).is_file() {
        return Ok(names::OPEN_CLIP_MODEL_TYPE.to_string());
    }
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    if value.get("model_type").is_none()
        && let Some(arch) = value.get("architecture").and_then(|v| v.as_str())
    {
        let timm = if arch.starts_with("resnet") {
            names::TIMM_RESNET_MODEL_TYPE
        } else {
            names::TIMM_VIT_MODEL_TYPE
        };
        return Ok(timm.to_string());
    }
    value
        .get("model_type")
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no string key `model_type` (nor timm's `architecture`)", path.display()))
}

/// Whether `<dir>/config.json` carries a `calibra_projector` (a SigLIP tower with MedGemma's
/// multimodal projector: frozen features only).
fn has_projector(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("calibra_projector").is_some())
}

/// Whether a regime scope (`None` = every encoder) includes the encoder `name`.
fn in_scope(scope: Option<&[String]>, name: &str) -> bool {
    scope.is_none_or(|list| list.iter().any(|n| n == name))
}

/// The regimes that read `encoder`'s weights, with the key path of each regime's table and the
/// model types it accepts (`None`: any).
fn readers(recipe: &Recipe, encoder: &EncoderEntry) -> Vec<(&'static str, Option<&'static [&'static str]>)> {
    let name = encoder.display_name();
    let r = &recipe.regimes;
    let mut out = Vec::new();
    if let Some(f) = &r.frozen
        && f.probes.iter().any(|p| p != "prior")
        && in_scope(f.encoders.as_deref(), &name)
    {
        out.push(("frozen", None));
    }
    if let Some(l) = &r.lora
        && in_scope(l.encoders.as_deref(), &name)
    {
        out.push(("lora", Some(names::LORA_MODEL_TYPES)));
    }
    if let Some(c) = &r.coop
        && in_scope(c.encoders.as_deref(), &name)
    {
        // MaPLe, PromptSRC and HiCroPL run on the same CLIP and SigLIP checkpoints as CoOp.
        out.push(("coop", Some(names::COOP_MODEL_TYPES)));
    }
    if let Some(f) = &r.full
        && in_scope(f.encoders.as_deref(), &name)
    {
        out.push(("full", None));
    }
    if let Some(z) = &r.zero_shot
        && in_scope(z.encoders.as_deref(), &name)
    {
        out.push(("zero-shot", Some(names::ZERO_SHOT_MODEL_TYPES)));
    }
    if let Some(e) = &r.estimate
        && in_scope(e.encoders.as_deref(), &name)
    {
        out.push(("estimate", None));
    }
    out
}

/// Reports every encoder problem of `recipe` (see the module docs), resolving hub ids in `hub_cache`.
pub(crate) fn check_encoders(
    recipe: &Recipe,
    hub_cache: Option<&Path>,
    problem: &mut dyn FnMut(KeyPath, String),
) {
    let root = KeyPath::root();
    for (i, encoder) in recipe.encoders.iter().enumerate() {
        let readers = readers(recipe, encoder);
        if readers.is_empty() {
            continue;
        }
        if !encoder.is_hub_id() && !Path::new(&encoder.source).is_dir() {
            continue; // reported by the recipe's own path check
        }
        let at = root.key("encoders").index(i).key("source");
        let dir = match resolve_encoder(&encoder.source, hub_cache) {
            Ok(dir) => dir,
            Err(message) => {
                problem(at, message);
                continue;
            }
        };
        let model_type = match model_type(&dir) {
            Ok(t) => t,
            Err(message) => {
                problem(at, message);
                continue;
            }
        };
        let projected = has_projector(&dir);
        for (regime, accepted) in readers {
            if projected && matches!(regime, "lora" | "full") {
                problem(
                    root.key("regimes").key(regime),
                    format!(
                        "encoder `{}` ({}) is a vision tower with MedGemma's projector (`calibra_projector` in its \
                         config.json, from `calibra convert vision-tower --projector`): frozen features only; \
                         convert the tower without --projector to fine-tune it, or restrict [regimes.{regime}] with \
                         encoders = [...]",
                        encoder.display_name(),
                        encoder.source
                    ),
                );
                continue;
            }
            let Some(accepted) = accepted else { continue };
            if accepted.contains(&model_type.as_str()) {
                if regime == "lora"
                    && let Some(l) = &recipe.regimes.lora
                    && !names::lora_targets_match(&model_type, &l.targets)
                {
                    let timm = model_type == names::TIMM_VIT_MODEL_TYPE;
                    let fix = if timm {
                        "its attention is one fused `qkv` Linear, as PEFT names it: add \"qkv\" to targets \
                         (query / value still serve the Hugging Face encoders)"
                    } else {
                        "`qkv` is a timm ViT's fused projection: add \"query\", \"value\" to targets"
                    };
                    problem(
                        root.key("regimes").key("lora").key("targets"),
                        format!(
                            "encoder `{}` ({}) has model_type `{model_type}`: LoRA targets [{}] wrap none \
                             of its projections ({}); {fix}, or restrict [regimes.lora] with encoders = [...]",
                            encoder.display_name(),
                            encoder.source,
                            l.targets.join(", "),
                            names::lora_modules_of(&model_type).join(", ")
                        ),
                    );
                }
                continue;
            }
            let what = match regime {
                "lora" => "LoRA is implemented for",
                "coop" => "CoOp needs a CLIP or SigLIP checkpoint (image and text towers):",
                _ => "zero-shot needs a CLIP or SigLIP checkpoint (image and text towers):",
            };
            problem(
                root.key("regimes").key(regime),
                format!(
                    "encoder `{}` ({}) has model_type `{model_type}`; {what} model_type {}; restrict \
                     [regimes.{regime}] with encoders = [...]",
                    encoder.display_name(),
                    encoder.source,
                    accepted.join(", ")
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValidationOptions;

    fn checkpoint(dir: &Path, model_type: &str) -> String {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("config.json"), format!("{{\"model_type\": \"{model_type}\"}}")).unwrap();
        dir.display().to_string()
    }

    fn problems(text: &str, cache: &Path) -> Vec<String> {
        let recipe = Recipe::parse(text, "t.toml", ValidationOptions { check_paths: false }).unwrap();
        let mut out = Vec::new();
        check_encoders(&recipe, Some(cache), &mut |at, m| out.push(format!("{at}: {m}")));
        out
    }

    fn recipe(encoders: &str, regimes: &str) -> String {
        format!(
            "seeds = [0]\nlabel_fractions = [1.0]\ncalibrators = [\"none\"]\n{encoders}\n[[datasets]]\n\
             spec = \"synth:derm?n=40\"\n{regimes}\n[[losses]]\nname = \"ce\"\n"
        )
    }

    const LORA: &str =
        "[regimes.lora]\nr = 4\nalpha = 8.0\ndropout = 0.0\nlr = 1e-4\nepochs = 1\ntargets = [\"query\"]\n";

    /// Issue 25 item 5: a SigLIP checkpoint (`SiglipModel`) runs zero-shot and every prompt method,
    /// MaPLe, PromptSRC and HiCroPL included; a ViT does not.
    #[test]
    fn siglip_runs_zero_shot_and_every_prompt_method() {
        let dir = tempfile::tempdir().unwrap();
        let siglip = checkpoint(&dir.path().join("siglip"), "siglip");
        let encoders = format!("[[encoders]]\nsource = \"{siglip}\"\n");
        let zs = "[regimes.zero-shot]\ntemplates = [\"P1\"]\n";
        assert!(problems(&recipe(&encoders, &format!("{LORA}{zs}")), dir.path()).is_empty());
        let methods = "[\"coop\", \"kgcoop\", \"prograd\", \"maple\", \"promptsrc\", \"hicropl\"]";
        let coop = format!("[regimes.coop]\nn_ctx = 4\nepochs = 1\nlr = 2e-3\nmethods = {methods}\n");
        assert!(problems(&recipe(&encoders, &coop), dir.path()).is_empty());
        let vit = checkpoint(&dir.path().join("vit"), "vit");
        let found =
            problems(&recipe(&format!("[[encoders]]\nsource = \"{vit}\"\n"), &coop), dir.path()).join("\n");
        assert!(found.contains("regimes.coop") && found.contains("CLIP or SigLIP"), "{found}");
    }

    /// Issue 17: `query` / `value` wrap nothing in a timm ViT (one fused `qkv`), and `qkv` nothing in a
    /// Hugging Face ViT; named up front, and a list with both serves a mixed panel.
    #[test]
    fn lora_targets_that_wrap_nothing_in_an_encoder_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let timm = dir.path().join("timm");
        std::fs::create_dir_all(&timm).unwrap();
        std::fs::write(timm.join("config.json"), r#"{"architecture": "vit_base_patch16_224"}"#).unwrap();
        let vit = checkpoint(&dir.path().join("vit"), "vit");
        let encoders =
            format!("[[encoders]]\nsource = \"{}\"\n[[encoders]]\nsource = \"{vit}\"\n", timm.display());
        let lora = |targets: &str| LORA.replace("targets = [\"query\"]", &format!("targets = [{targets}]"));
        let found = problems(&recipe(&encoders, &lora("\"query\", \"value\"")), dir.path()).join("\n");
        assert!(
            found.contains("regimes.lora.targets")
                && found.contains("encoder `timm`")
                && found.contains("timm_vit")
                && found.contains("add \"qkv\""),
            "{found}"
        );
        assert!(!found.contains("encoder `vit`"), "{found}");
        let found = problems(&recipe(&encoders, &lora("\"qkv\"")), dir.path()).join("\n");
        assert!(found.contains("encoder `vit`") && found.contains("add \"query\", \"value\""), "{found}");
        assert!(problems(&recipe(&encoders, &lora("\"query\", \"value\", \"qkv\"")), dir.path()).is_empty());
    }

    /// Issue 17: the shipped CRS-Bench recipe passes the up-front encoder checks once every source
    /// holds what it names (the hub repos' `model_type`s, and the layouts the `calibra convert`
    /// commands its comments give write): every regime runs on every encoder it lists.
    #[test]
    fn the_crs_bench_recipe_passes_the_encoder_checks() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes/crs-bench.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // source → what a checkout of it holds.
        let layouts: [(&str, &str); 15] = [
            ("hf:microsoft/resnet-50", r#"{"model_type": "resnet"}"#),
            ("hf:google/vit-base-patch16-224-in21k", r#"{"model_type": "vit"}"#),
            ("hf:openai/clip-vit-base-patch16", r#"{"model_type": "clip"}"#),
            ("hf:google/siglip-base-patch16-224", r#"{"model_type": "siglip"}"#),
            ("hf:facebook/dinov2-base", r#"{"model_type": "dinov2"}"#),
            ("hf:facebook/vit-mae-base", r#"{"model_type": "vit_mae"}"#),
            ("hf:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224", "open_clip"),
            ("hf:google/medsiglip-448", r#"{"model_type": "siglip"}"#),
            ("hf:openai/clip-vit-large-patch14-336", r#"{"model_type": "clip"}"#),
            (
                "/models/medgemma-vision",
                r#"{"model_type": "siglip_vision_model", "calibra_projector": {"type": "gemma3"}}"#,
            ),
            ("/models/panderm", r#"{"architecture": "vit_large_patch16_224"}"#),
            ("/models/retfound", r#"{"architecture": "vit_large_patch16_224"}"#),
            ("hf:microsoft/rad-dino", r#"{"model_type": "dinov2"}"#),
            ("/models/biovil", r#"{"architecture": "resnet50"}"#),
            ("/models/chexzero", "open_clip"),
        ];
        let mut local = text.clone();
        for (i, (source, config)) in layouts.iter().enumerate() {
            let ck = dir.path().join(format!("e{i}"));
            std::fs::create_dir_all(&ck).unwrap();
            let file = if *config == "open_clip" { OPEN_CLIP_CONFIG } else { "config.json" };
            std::fs::write(ck.join(file), if *config == "open_clip" { "{}" } else { config }).unwrap();
            let quoted = format!("source = \"{source}\"");
            assert!(local.contains(&quoted), "the recipe no longer names {source}");
            local = local.replace(&quoted, &format!("source = \"{}\"", ck.display()));
        }
        assert_eq!(local.matches("source = ").count(), layouts.len(), "every encoder is covered");
        let found = problems(&local, dir.path());
        assert!(found.is_empty(), "{}", found.join("\n"));
        // MedGemma's projected stack is frozen-only: naming it in the LoRA arm is caught up front.
        let lora = local.replace("encoders = [\"DINOv2\",", "encoders = [\"MedGemma\", \"DINOv2\",");
        let found = problems(&lora, dir.path()).join("\n");
        assert!(found.contains("encoder `MedGemma`") && found.contains("frozen features only"), "{found}");
    }

    /// Issue 20 defect 8: `--dry-run` said valid for zero-shot on a ViT, LoRA on a family that cannot
    /// take it, and an `hf:` id that is not cached. (Issue 17: LoRA runs on every transformer family
    /// the encoder loads; a ResNet, whose convolutions have no LoRA here, is refused.)
    #[test]
    fn regimes_an_encoder_cannot_run_and_uncached_ids_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let vit = checkpoint(&dir.path().join("vit"), "vit");
        let dino = checkpoint(&dir.path().join("dino"), "dinov2");
        let clip = checkpoint(&dir.path().join("clip"), "clip");
        let resnet = checkpoint(&dir.path().join("resnet"), "resnet");
        let cache = dir.path().join("hub");
        let encoders = format!(
            "[[encoders]]\nsource = \"{vit}\"\n[[encoders]]\nsource = \"{dino}\"\n[[encoders]]\nsource = \"{clip}\"\n\
             [[encoders]]\nsource = \"{resnet}\"\n"
        );
        let zs = "[regimes.zero-shot]\ntemplates = [\"P1\"]\n";
        let found = problems(&recipe(&encoders, &format!("{LORA}{zs}")), &cache);
        let joined = found.join("\n");
        assert_eq!(found.len(), 4, "{joined}");
        assert!(
            joined.contains("regimes.lora: encoder `resnet`") && joined.contains("model_type `resnet`"),
            "{joined}"
        );
        assert!(!joined.contains("regimes.lora: encoder `dino`"), "{joined}");
        assert!(!joined.contains("regimes.lora: encoder `clip`"), "{joined}");
        assert!(joined.contains("regimes.zero-shot: encoder `vit`") && joined.contains("CLIP"), "{joined}");
        assert!(joined.contains("regimes.zero-shot: encoder `dino`"), "{joined}");
        assert!(joined.contains("regimes.zero-shot: encoder `resnet`"), "{joined}");
        // Restricting the regimes to the encoders that can run them clears every problem.
        let scoped = format!(
            "{}encoders = [\"vit\", \"dino\", \"clip\"]\n[regimes.zero-shot]\ntemplates = [\"P1\"]\nencoders = [\"clip\"]\n",
            LORA
        );
        assert!(problems(&recipe(&encoders, &scoped), &cache).is_empty());

        // An hf: id missing from the cache, then present in it.
        let hub = "[[encoders]]\nsource = \"hf:org/tiny\"\n";
        let found = problems(&recipe(hub, LORA), &cache);
        assert!(
            found.len() == 1
                && found[0].starts_with("encoders[0].source")
                && found[0].contains("not in the local Hugging Face cache"),
            "{found:?}"
        );
        let snap = cache.join("models--org--tiny/snapshots/abc");
        checkpoint(&snap, "vit");
        std::fs::create_dir_all(cache.join("models--org--tiny/refs")).unwrap();
        std::fs::write(cache.join("models--org--tiny/refs/main"), "abc\n").unwrap();
        assert!(problems(&recipe(hub, LORA), &cache).is_empty());
        // A prior-only grid reads no encoder: nothing to check.
        let prior = "[regimes.frozen]\nprobes = [\"prior\"]\n";
        let text = recipe("[[encoders]]\nsource = \"hf:org/absent\"\n", prior)
            .replace("[[losses]]\nname = \"ce\"\n", "");
        assert!(problems(&text, &cache).is_empty());
    }

    /// A native OpenCLIP directory (open_clip_config.json, no config.json) can run zero-shot and CoOp,
    /// not LoRA.
    #[test]
    fn an_open_clip_directory_is_a_clip_model_without_lora() {
        let dir = tempfile::tempdir().unwrap();
        let oc = dir.path().join("oc");
        std::fs::create_dir_all(&oc).unwrap();
        std::fs::write(oc.join("open_clip_config.json"), r#"{"model_cfg": {}}"#).unwrap();
        assert_eq!(model_type(&oc).unwrap(), names::OPEN_CLIP_MODEL_TYPE);
        let encoders = format!("[[encoders]]\nsource = \"{}\"\n", oc.display());
        let zs = "[regimes.zero-shot]\ntemplates = [\"P1\"]\n";
        let found = problems(&recipe(&encoders, &format!("{LORA}{zs}")), &dir.path().join("hub"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("regimes.lora") && found[0].contains("model_type `open_clip`"),
            "{found:?}"
        );
    }

    /// timm's layout (`architecture`, no `model_type`): a ViT takes LoRA, a ResNet does not.
    #[test]
    fn timm_checkpoints_are_named_by_architecture() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, arch: &str| {
            let d = dir.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("config.json"), format!("{{\"architecture\": \"{arch}\"}}")).unwrap();
            d
        };
        let vit = write("vit", "vit_tiny_patch16_224");
        let resnet = write("resnet", "resnet50");
        assert_eq!(model_type(&vit).unwrap(), names::TIMM_VIT_MODEL_TYPE);
        assert_eq!(model_type(&resnet).unwrap(), names::TIMM_RESNET_MODEL_TYPE);
        let encoders = format!(
            "[[encoders]]\nsource = \"{}\"\n[[encoders]]\nsource = \"{}\"\n",
            vit.display(),
            resnet.display()
        );
        // `qkv`: the timm ViT's fused attention projection (`query` alone wraps nothing there).
        let lora = LORA.replace("targets = [\"query\"]", "targets = [\"qkv\"]");
        let found = problems(&recipe(&encoders, &lora), &dir.path().join("hub"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("encoder `resnet`") && found[0].contains("`timm_resnet`"), "{found:?}");
    }

    #[test]
    fn a_directory_without_config_and_a_file_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("weights.bin"), "x").unwrap();
        let err = resolve_encoder(&dir.path().join("weights.bin").display().to_string(), None).unwrap_err();
        assert!(err.contains("is a file"), "{err}");
        let err = resolve_encoder(&dir.path().display().to_string(), None).unwrap_err();
        assert!(err.contains("has no config.json"), "{err}");
        std::fs::write(dir.path().join("config.json"), "{}").unwrap();
        let err = model_type(dir.path()).unwrap_err();
        assert!(err.contains("model_type"), "{err}");
    }
}
