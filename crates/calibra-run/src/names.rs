//! The names a recipe may use, as plain constants in one place so that they can be kept in sync with
//! the crates that implement them (calibra-train probes and losses, calibra-calibrate methods,
//! calibra-data perturbations). A name missing here is rejected by recipe validation before any work
//! starts.

/// Probes on frozen features (`[regimes.frozen] probes`): logistic regression (L-BFGS), a small MLP,
/// k-nearest neighbours, and `prior`, the intercept-only model (predicts the training split's class
/// frequencies for every sample: the floor any probe must beat).
pub const PROBES: &[&str] = &["logistic", "mlp", "knn", "prior"];

/// Training losses of the adapted regimes (`[[losses]] name`), with the arguments each accepts.
/// `ce` cross-entropy (per-label masked BCE on multilabel datasets); `label-smoothing` (`epsilon`,
/// torch's ε/K form); `focal` (`gamma`); `mdca` (`beta`: CE + β·MDCA); `mbls` (`margin`, `alpha`: the
/// weight of the margin term); `mcm` (`alpha`, `beta`); `zs-norm` (no argument: CE on logits
/// normalised into the zero-shot range); `penalty` (`lambda`: CE + λ·range penalty, 10 in the paper).
pub const LOSSES: &[(&str, &[&str])] = &[
    ("ce", &[]),
    ("label-smoothing", &["epsilon"]),
    ("focal", &["gamma"]),
    ("mdca", &["beta"]),
    ("mbls", &["margin", "alpha"]),
    ("mcm", &["alpha", "beta"]),
    ("zs-norm", &[]),
    ("penalty", &["lambda"]),
];

/// Transferability estimators (`[regimes.estimate] estimators`), as calibra-transfer names them
/// (`calibra transfer score --estimators`): LogME, H-score, shrinkage H-score, GBC, NLEEP,
/// TransRate, the participation ratio and k-NN neighbour-outcome agreement. One list, the estimate
/// records' contract in calibra-crs; the `calibra` binary's tests check it against calibra-transfer's
/// names. LEEP is not offered: it needs a source classifier's posteriors, which a feature cache does
/// not hold.
pub const ESTIMATORS: &[&str] = &calibra_crs::transfer_prediction::ESTIMATORS;

/// Post-hoc calibrators (`calibrators`); `none` keeps the raw outputs.
pub const CALIBRATORS: &[&str] = &["none", "temperature", "vector", "isotonic", "dirichlet"];
/// The calibrators that need single-label predictions (a multilabel dataset is calibrated per label,
/// which only `temperature` and `isotonic` support).
pub const SINGLE_LABEL_CALIBRATORS: &[&str] = &["vector", "dirichlet"];

/// Acquisition perturbations (`[perturbations] names`), as named by calibra-data.
pub const PERTURBATIONS: &[&str] = &["gaussian-blur", "jpeg", "contrast", "rician-noise", "fov-crop"];

/// Largest severity a recipe may ask for (severities are 1..=MAX_SEVERITY): exactly what calibra-data
/// implements ([`calibra_data::perturb::Severity::MAX_LEVEL`]), so that a recipe that validates never
/// fails later with an unsupported severity.
pub const MAX_SEVERITY: u32 = calibra_data::perturb::Severity::MAX_LEVEL as u32;

/// LoRA target module names (`[regimes.lora] targets`), Hugging Face ViT/CLIP naming.
pub const LORA_TARGETS: &[&str] =
    &["query", "key", "value", "dense", "fc1", "fc2", "q_proj", "k_proj", "v_proj", "out_proj"];

/// `config.json` `model_type`s LoRA can be injected into (calibra-models' ViT/DeiT encoder; checked
/// up front by [`crate::encoder_check`]).
pub const LORA_MODEL_TYPES: &[&str] = &["vit", "deit"];

/// `config.json` `model_type`s with image and text towers, which zero-shot and CoOp need.
pub const CLIP_MODEL_TYPES: &[&str] = &["clip"];

/// Class-name position of the CoOp prompt (`[regimes.coop] class_position`).
pub const COOP_CLASS_POSITIONS: &[&str] = &["end", "middle", "front"];

/// Whether `name` is one of `list`.
pub fn is_known(list: &[&str], name: &str) -> bool {
    list.contains(&name)
}

/// The argument names of loss `name`, or `None` for an unknown loss.
pub fn loss_args(name: &str) -> Option<&'static [&'static str]> {
    LOSSES.iter().find(|(n, _)| *n == name).map(|(_, args)| *args)
}
