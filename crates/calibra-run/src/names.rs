//! The names a recipe may use, in one place: plain constants where calibra-run is their one list
//! (probes, losses, LoRA targets), derived from the crate that implements them elsewhere
//! (calibra-calibrate methods, calibra-data perturbations, calibra-crs estimators). A name missing
//! here is rejected by recipe validation before any work starts.

use calibra_calibrate::{CalibratorOptions, Method};
use calibra_predictions::Task;

/// Probes on frozen features (`[regimes.frozen] probes`): logistic regression (L-BFGS), a small MLP,
/// k-nearest neighbours, and `prior`, the intercept-only model (predicts the training split's class
/// frequencies for every sample: the floor any probe must beat).
pub const PROBES: &[&str] = &["logistic", "mlp", "knn", "prior"];

/// A training loss a recipe may name (`[[losses]] name`), its arguments, and the calibra-train
/// registry loss that implements it: the one list that recipe validation and loss construction both
/// read (the recipe's names and arguments are the papers', the registry's are the implementations').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossName {
    /// The recipe name.
    pub name: &'static str,
    /// Each recipe argument, with the registry argument it sets (`epsilon` → `eps`), in the order the
    /// registry receives them.
    pub args: &'static [(&'static str, &'static str)],
    /// The calibra-train registry loss on single-label data.
    pub registry: &'static str,
    /// The registry loss on multilabel data, where it differs; `None`: the same loss, which then
    /// refuses multilabel batches with an error naming it.
    pub multilabel_registry: Option<&'static str>,
}

/// Training losses of the adapted regimes. `ce` cross-entropy (per-label masked BCE on multilabel
/// datasets); `label-smoothing` (`epsilon`, torch's ε/K form); `focal` (`gamma`); `mdca` (`beta`: CE +
/// β·MDCA); `mbls` (`margin`, `alpha`: the weight of the margin term); `mcm` (`alpha`, `beta`);
/// `zs-norm` (no argument: CE on logits normalised into the zero-shot range); `penalty` (`lambda`: CE +
/// λ·range penalty, 10 in the paper).
pub const LOSSES: &[LossName] = &[
    LossName { name: "ce", args: &[], registry: "ce", multilabel_registry: Some("bce_masked") },
    LossName {
        name: "label-smoothing",
        args: &[("epsilon", "eps")],
        registry: "ls",
        multilabel_registry: None,
    },
    LossName { name: "focal", args: &[("gamma", "gamma")], registry: "focal", multilabel_registry: None },
    LossName { name: "mdca", args: &[("beta", "mdca.beta")], registry: "ce+mdca", multilabel_registry: None },
    LossName {
        name: "mbls",
        args: &[("margin", "margin"), ("alpha", "lambda")],
        registry: "mbls",
        multilabel_registry: None,
    },
    LossName {
        name: "mcm",
        args: &[("alpha", "alpha"), ("beta", "beta")],
        registry: "mcm",
        multilabel_registry: None,
    },
    LossName { name: "zs-norm", args: &[], registry: "zs_norm", multilabel_registry: None },
    LossName {
        name: "penalty",
        args: &[("lambda", "lambda")],
        registry: "range_penalty",
        multilabel_registry: None,
    },
];

/// The loss a recipe names, or `None` for an unknown one.
pub fn loss(name: &str) -> Option<&'static LossName> {
    LOSSES.iter().find(|l| l.name == name)
}

/// The recipe argument names of loss `name`, or `None` for an unknown loss.
pub fn loss_args(name: &str) -> Option<Vec<&'static str>> {
    loss(name).map(|l| l.args.iter().map(|(recipe, _)| *recipe).collect())
}

/// The calibra-train registry spec and `key=value` arguments of a recipe loss with argument values
/// `args` (recipe names) on single-label or multilabel data. An unknown loss or a missing argument
/// is an error naming it (recipe validation reports both before any work; this is the executors'
/// guard).
pub fn registry_loss(
    name: &str,
    args: &std::collections::BTreeMap<String, f64>,
    multilabel: bool,
) -> Result<(String, Vec<String>), String> {
    let l = loss(name).ok_or_else(|| format!("loss `{name}` has no implementation in calibra-train"))?;
    let spec = if multilabel { l.multilabel_registry.unwrap_or(l.registry) } else { l.registry };
    let args = l
        .args
        .iter()
        .map(|(recipe, registry)| {
            let v =
                args.get(*recipe).ok_or_else(|| format!("loss `{name}` needs the argument `{recipe}`"))?;
            Ok(format!("{registry}={v}"))
        })
        .collect::<Result<_, String>>()?;
    Ok((spec.to_string(), args))
}

/// Transferability estimators (`[regimes.estimate] estimators`), as calibra-transfer names them
/// (`calibra transfer score --estimators`): LogME, H-score, shrinkage H-score, GBC, NLEEP,
/// TransRate, the participation ratio and k-NN neighbour-outcome agreement. One list, the estimate
/// records' contract in calibra-crs; the `calibra` binary's tests check it against calibra-transfer's
/// names. LEEP is not offered: it needs a source classifier's posteriors, which a feature cache does
/// not hold.
pub const ESTIMATORS: &[&str] = &calibra_crs::transfer_prediction::ESTIMATORS;

/// Whether a recipe may name the post-hoc method `method` (`calibrators`): the methods every fit's
/// records offer. Matrix scaling (which over-fits for large K without a chosen regulariser), Platt
/// scaling, SaLS (which needs the zero-shot logits of each sample) and histogram binning stay
/// `calibra calibrate`'s. The match is exhaustive, so a new calibra-calibrate method is placed on one
/// side here, the one place.
pub fn in_recipes(method: Method) -> bool {
    match method {
        Method::Temperature | Method::Vector | Method::Isotonic | Method::Dirichlet => true,
        Method::Matrix | Method::Platt | Method::Sals | Method::Histogram => false,
    }
}

/// Post-hoc calibrators a recipe may name (`calibrators`): `none` (the raw outputs), then the
/// calibra-calibrate methods [`in_recipes`] allows, in calibra-calibrate's order.
pub fn calibrators() -> Vec<&'static str> {
    std::iter::once("none")
        .chain(Method::ALL.into_iter().filter(|m| in_recipes(*m)).map(Method::as_str))
        .collect()
}

/// Whether the recipe calibrator `name` needs single-label predictions: calibra-calibrate has no
/// per-label variant of it for multilabel predictions (only `temperature`, `isotonic` and `platt`
/// have one). `none` and unknown names are not.
pub fn single_label_calibrator(name: &str) -> bool {
    name.parse::<Method>().is_ok_and(|m| {
        calibra_calibrate::calibrator_for(m, Task::Multilabel, &CalibratorOptions::default()).is_err()
    })
}

/// Acquisition perturbations (`[perturbations] names`): calibra-data's own list, in protocol order.
pub fn perturbations() -> Vec<&'static str> {
    calibra_data::Perturbation::ALL.iter().map(|p| p.name()).collect()
}

/// Largest severity a recipe may ask for (severities are 1..=MAX_SEVERITY): exactly what calibra-data
/// implements ([`calibra_data::perturb::Severity::MAX_LEVEL`]), so that a recipe that validates never
/// fails later with an unsupported severity.
pub const MAX_SEVERITY: u32 = calibra_data::perturb::Severity::MAX_LEVEL as u32;

/// A LoRA target a recipe may name (`[regimes.lora] targets`, Hugging Face ViT/CLIP naming) and the
/// PEFT module-name suffixes it wraps in calibra-models' encoders (transformers 5.x names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoraTarget {
    pub name: &'static str,
    pub peft: &'static [&'static str],
}

/// LoRA targets: `query`/`q_proj` → `q_proj`, `key`/`k_proj` → `k_proj`, `value`/`v_proj` → `v_proj`,
/// `out_proj` → the attention output projection (`o_proj` in ViT/DeiT/DINOv2, `self_attn.out_proj` in
/// CLIP/SigLIP: the `self_attn.` keeps SigLIP's pooling-head `nn.MultiheadAttention` out_proj, which
/// LoRA cannot act on, out; `attn.proj` in timm ViTs: the `attn.` keeps timm's patch-embedding Conv2d
/// `patch_embed.proj` out), `fc1`, `fc2`, and `dense` (transformers 4.x's name for the attention
/// output and both MLP projections) → the attention output, `fc1`, `fc2`. `qkv` → timm's fused
/// `attn.qkv` (one Linear for q, k and v, as PEFT adapts it; timm ViTs have no separate q/k/v, so
/// `query` / `key` / `value` match nothing there). The one list that recipe
/// validation and LoRA construction (calibra-exec) read.
pub const LORA_TARGETS: &[LoraTarget] = &[
    LoraTarget { name: "query", peft: &["q_proj"] },
    LoraTarget { name: "key", peft: &["k_proj"] },
    LoraTarget { name: "value", peft: &["v_proj"] },
    LoraTarget { name: "dense", peft: &["o_proj", "self_attn.out_proj", "attn.proj", "fc1", "fc2"] },
    LoraTarget { name: "fc1", peft: &["fc1"] },
    LoraTarget { name: "fc2", peft: &["fc2"] },
    LoraTarget { name: "q_proj", peft: &["q_proj"] },
    LoraTarget { name: "k_proj", peft: &["k_proj"] },
    LoraTarget { name: "v_proj", peft: &["v_proj"] },
    LoraTarget { name: "out_proj", peft: &["o_proj", "self_attn.out_proj", "attn.proj"] },
    LoraTarget { name: "qkv", peft: &["qkv"] },
];

/// The PEFT module suffixes of the linears LoRA can wrap in an encoder of `model_type`: a timm ViT's
/// fused `qkv`, `attn.proj`, `fc1`, `fc2`; the Hugging Face families' separate `q_proj` / `k_proj` /
/// `v_proj`, attention outputs and MLPs. [`lora_targets_for`] and recipe validation read it.
pub fn lora_modules_of(model_type: &str) -> &'static [&'static str] {
    if model_type == TIMM_VIT_MODEL_TYPE {
        &["qkv", "attn.proj", "fc1", "fc2"]
    } else {
        &["q_proj", "k_proj", "v_proj", "o_proj", "self_attn.out_proj", "fc1", "fc2"]
    }
}

/// Whether recipe LoRA `targets` wrap at least one projection of an encoder of `model_type`.
pub fn lora_targets_match(model_type: &str, targets: &[String]) -> bool {
    let modules = lora_modules_of(model_type);
    peft_targets(targets).is_ok_and(|p| p.iter().any(|t| modules.contains(&t.as_str())))
}

/// The default LoRA targets of `calibra train` for an encoder of `model_type`: the query and value
/// projections (CRS-Bench's, PEFT's usual), which a timm ViT holds fused in `qkv`.
pub fn lora_targets_for(model_type: &str) -> Vec<String> {
    let names: &[&str] = if model_type == TIMM_VIT_MODEL_TYPE { &["qkv"] } else { &["query", "value"] };
    names.iter().map(|n| n.to_string()).collect()
}

/// The recipe names of [`LORA_TARGETS`], in order.
pub fn lora_target_names() -> Vec<&'static str> {
    LORA_TARGETS.iter().map(|t| t.name).collect()
}

/// The PEFT module suffixes of recipe LoRA targets, each once, in first-use order.
pub fn peft_targets(targets: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for t in targets {
        let target = LORA_TARGETS
            .iter()
            .find(|l| l.name == t)
            .ok_or_else(|| format!("LoRA target `{t}` is not a projection this build can wrap"))?;
        for n in target.peft {
            if !out.iter().any(|o| o == n) {
                out.push(n.to_string());
            }
        }
    }
    Ok(out)
}

/// `config.json` `model_type`s LoRA can be injected into (ViT/DeiT, ViT-MAE, DINOv2 with and without
/// registers, CLIP and SigLIP vision towers, timm ViTs ([`TIMM_VIT_MODEL_TYPE`]); checked up front by
/// [`crate::encoder_check`]). Not `resnet` / [`TIMM_RESNET_MODEL_TYPE`], which calibra-models loads but
/// whose convolutions have no LoRA here (PEFT's Conv2d LoRA is not implemented): fine-tune it with the
/// `full` regime.
pub const LORA_MODEL_TYPES: &[&str] = &[
    "vit",
    "deit",
    "vit_mae",
    "dinov2",
    "dinov2_with_registers",
    "clip",
    "clip_vision_model",
    "siglip",
    "siglip_vision_model",
    TIMM_VIT_MODEL_TYPE,
];

/// What [`crate::encoder_check`] calls a timm ViT checkpoint (timm's Hugging Face layout: `config.json`
/// with `architecture` and no `model_type`; any architecture but a `resnet*`), which has no
/// `model_type`.
pub const TIMM_VIT_MODEL_TYPE: &str = "timm_vit";

/// What [`crate::encoder_check`] calls a timm ResNet checkpoint (`architecture` `resnet*`, no
/// `model_type`).
pub const TIMM_RESNET_MODEL_TYPE: &str = "timm_resnet";

/// What [`crate::encoder_check`] calls a native OpenCLIP checkpoint (`open_clip_config.json`, no
/// `config.json`), which has no `model_type`: zero-shot and CoOp read it, LoRA does not (refused by
/// calibra-models: PEFT names OpenCLIP's fused attention differently).
pub const OPEN_CLIP_MODEL_TYPE: &str = "open_clip";

/// `config.json` `model_type`s every prompt-learning method (CoOp, KgCoOp, ProGrad, MaPLe, PromptSRC,
/// HiCroPL) runs on: CLIP, native OpenCLIP and SigLIP
/// (whose text tower the context is learned through; sigmoid-trained logits read through the
/// softmax over classes, as in zero-shot).
pub const COOP_MODEL_TYPES: &[&str] = &["clip", OPEN_CLIP_MODEL_TYPE, "siglip"];

/// Prompt-learning methods that prompt the image tower too (on CLIP and SigLIP, as CoOp).
pub const IMAGE_PROMPT_METHODS: &[&str] = &["maple", "promptsrc", "hicropl"];

/// `config.json` `model_type`s zero-shot classification supports: CLIP (softmax-trained logits), native
/// OpenCLIP ([`OPEN_CLIP_MODEL_TYPE`], a CLIP) and SigLIP (`SiglipModel`, sigmoid-trained logits).
pub const ZERO_SHOT_MODEL_TYPES: &[&str] = &["clip", OPEN_CLIP_MODEL_TYPE, "siglip"];

/// Class-name position of the CoOp prompt (`[regimes.coop] class_position`).
pub const COOP_CLASS_POSITIONS: &[&str] = &["end", "middle", "front"];

/// Prompt-learning methods of `[regimes.coop] methods` (and `calibra train --method`): CoOp (Zhou
/// et al., IJCV 2022), KgCoOp (Yao et al., CVPR 2023), ProGrad (Zhu et al., ICCV 2023), MaPLe
/// (Khattak et al., CVPR 2023), PromptSRC (Khattak et al., ICCV 2023) and HiCroPL (Zheng et al.,
/// ICCV 2025), as calibra-train's `CoopMethod` implements them.
pub const COOP_METHODS: &[&str] = &["coop", "kgcoop", "prograd", "maple", "promptsrc", "hicropl"];

/// Why `name` is not a prompt-learning method calibra runs (`None`: it is one of [`COOP_METHODS`]).
/// The one message of recipe validation (`[regimes.coop] methods`) and `calibra train --method`.
pub fn coop_method_problem(name: &str) -> Option<String> {
    (!is_known(COOP_METHODS, name))
        .then(|| format!("unknown CoOp method `{name}`; expected one of {}", COOP_METHODS.join(", ")))
}

/// Whether `name` is one of `list`.
pub fn is_known(list: &[&str], name: &str) -> bool {
    list.contains(&name)
}

/// Why `name` is not a device name (`cpu`/`flex`, `ndarray`, `wgpu`, `wgpu:N`, `cuda`, `cuda:N`;
/// case-insensitive), or `None`. The grammar of calibra-models' `DeviceKind`, which this crate cannot
/// depend on (it stays free of burn); a test in calibra-exec keeps the two in step.
pub fn device_problem(name: &str) -> Option<String> {
    let lower = name.trim().to_ascii_lowercase();
    let (kind, index) = match lower.split_once(':') {
        Some((kind, index)) => (kind, Some(index)),
        None => (lower.as_str(), None),
    };
    let index_ok = index.is_none_or(|i| i.parse::<usize>().is_ok());
    let known = match kind {
        "cpu" | "flex" | "ndarray" => index.is_none(),
        "wgpu" | "cuda" => index_ok,
        _ => false,
    };
    (!known).then(|| {
        format!("unknown device `{name}`; expected one of: cpu, wgpu, wgpu:N, cuda, cuda:N, ndarray (N a device index)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn recipe_losses_map_to_registry_specs_and_arguments() {
        let args: BTreeMap<String, f64> = [("margin".to_string(), 10.0), ("alpha".to_string(), 0.1)].into();
        assert_eq!(
            registry_loss("mbls", &args, false).unwrap(),
            ("mbls".to_string(), vec!["margin=10".to_string(), "lambda=0.1".to_string()])
        );
        assert_eq!(registry_loss("ce", &BTreeMap::new(), true).unwrap().0, "bce_masked");
        assert_eq!(registry_loss("ce", &BTreeMap::new(), false).unwrap().0, "ce");
        assert_eq!(
            registry_loss("mdca", &BTreeMap::new(), false).unwrap_err(),
            "loss `mdca` needs the argument `beta`"
        );
        assert!(registry_loss("hinge", &BTreeMap::new(), false).unwrap_err().contains("`hinge`"));
        assert_eq!(loss_args("mcm").unwrap(), ["alpha", "beta"]);
        assert!(loss_args("hinge").is_none());
    }

    #[test]
    fn names_are_distinct_and_perturbations_are_calibra_datas() {
        for list in [LOSSES.iter().map(|l| l.name).collect::<Vec<_>>(), perturbations(), calibrators()] {
            let mut sorted = list.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), list.len(), "{list:?}");
        }
        assert_eq!(perturbations(), ["gaussian-blur", "jpeg", "contrast", "rician-noise", "fov-crop"]);
    }
}
