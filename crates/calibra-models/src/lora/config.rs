//! The LoRA configuration, field for field the `adapter_config.json` that PEFT 0.21 reads and writes,
//! and PEFT's rules for choosing the wrapped modules and their per-module rank / alpha.

use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::LoraError;

/// `target_modules` (and `exclude_modules`): a list of module-name suffixes or one regular expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TargetModules {
    /// A module matches when its name equals an entry or ends with `.` + entry.
    Names(Vec<String>),
    /// A module matches when the whole name matches the expression (Python `re.fullmatch`).
    Regex(String),
}

impl TargetModules {
    /// Does the module called `name` (dot-separated path, e.g. `vit.layers.0.attention.q_proj`) match?
    pub fn matches(&self, name: &str) -> Result<bool, LoraError> {
        match self {
            TargetModules::Names(names) => {
                Ok(names.iter().any(|t| name == t || name.ends_with(&format!(".{t}"))))
            }
            TargetModules::Regex(pattern) => Ok(full_regex(pattern)?.is_match(name)),
        }
    }
}

/// How the A factor is initialised (`init_lora_weights`); B is always zero, so a fresh adapter leaves
/// the model unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoraInit {
    /// `true`: A ~ Kaiming-uniform(a = √5) = U(−1/√in, 1/√in).
    #[default]
    KaimingUniform,
    /// `"gaussian"`: A ~ N(0, 1/r²).
    Gaussian,
    /// `false`: A ~ Kaiming-uniform and B random too — PEFT's "not identity at init" test mode. We
    /// refuse it: an adapter that changes the model at step 0 is never what a user wants here.
    Disabled,
}

impl Serialize for LoraInit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            LoraInit::KaimingUniform => s.serialize_bool(true),
            LoraInit::Gaussian => s.serialize_str("gaussian"),
            LoraInit::Disabled => s.serialize_bool(false),
        }
    }
}

impl<'de> Deserialize<'de> for LoraInit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        match &value {
            serde_json::Value::Bool(true) => Ok(LoraInit::KaimingUniform),
            serde_json::Value::Bool(false) => Ok(LoraInit::Disabled),
            serde_json::Value::String(s) if s == "gaussian" => Ok(LoraInit::Gaussian),
            other => Err(serde::de::Error::custom(format!(
                "init_lora_weights: expected true, false or \"gaussian\", found {other} \
                 (PiSSA/OLoRA/LoftQ initialisations are not supported)"
            ))),
        }
    }
}

fn default_r() -> usize {
    8
}
fn default_alpha() -> f64 {
    8.0
}
fn default_bias() -> String {
    "none".to_string()
}
fn default_peft_type() -> String {
    "LORA".to_string()
}

/// The contents of a PEFT `adapter_config.json` for LoRA. Defaults are PEFT 0.21.2's `LoraConfig`
/// defaults. PEFT writes ~45 keys; those calibra does not implement are kept in
/// [`LoraConfig::other_options`] and [`LoraConfig::validate`] accepts them only at PEFT's default (so
/// no option is ever silently ignored), and writes them back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraConfig {
    #[serde(default = "default_peft_type")]
    pub peft_type: String,
    /// Rank r.
    #[serde(default = "default_r")]
    pub r: usize,
    /// Scaling numerator: s = alpha / r (or alpha / √r with `use_rslora`).
    #[serde(default = "default_alpha")]
    pub lora_alpha: f64,
    /// Dropout probability on the LoRA branch input only.
    #[serde(default)]
    pub lora_dropout: f64,
    /// Which modules get a LoRA branch. PEFT has no default for ViT, so it must be given.
    #[serde(default)]
    pub target_modules: Option<TargetModules>,
    /// Modules never wrapped even if they match `target_modules`.
    #[serde(default)]
    pub exclude_modules: Option<TargetModules>,
    /// `"none"` only: biases stay frozen.
    #[serde(default = "default_bias")]
    pub bias: String,
    /// Must be false (Conv1D-style GPT-2 weights are not used by the encoders here).
    #[serde(default)]
    pub fan_in_fan_out: bool,
    /// s = alpha / √r instead of alpha / r.
    #[serde(default)]
    pub use_rslora: bool,
    /// Must be false (DoRA is not implemented).
    #[serde(default)]
    pub use_dora: bool,
    /// Must be false (PEFT's trainable bias on lora_B is not implemented).
    #[serde(default)]
    pub lora_bias: bool,
    #[serde(default)]
    pub init_lora_weights: LoraInit,
    /// Modules trained in full and saved whole in the adapter (e.g. the classifier head).
    #[serde(default)]
    pub modules_to_save: Option<Vec<String>>,
    /// Per-module rank overrides: pattern → r (pattern matched like PEFT's `get_pattern_key`).
    #[serde(default)]
    pub rank_pattern: BTreeMap<String, usize>,
    /// Per-module alpha overrides: pattern → alpha.
    #[serde(default)]
    pub alpha_pattern: BTreeMap<String, f64>,
    /// Only wrap these layer indices (with `layers_pattern` naming the layer list).
    #[serde(default)]
    pub layers_to_transform: Option<LayerIndices>,
    #[serde(default)]
    pub layers_pattern: Option<LayerPattern>,
    #[serde(default)]
    pub base_model_name_or_path: Option<String>,
    #[serde(default)]
    pub task_type: Option<String>,
    #[serde(default)]
    pub inference_mode: bool,
    #[serde(default)]
    pub revision: Option<String>,
    /// Every other key of the file (PEFT options calibra does not implement, and metadata such as
    /// `auto_mapping` / `peft_version`); see [`PEFT_INERT_OPTIONS`].
    #[serde(flatten)]
    pub other_options: BTreeMap<String, serde_json::Value>,
}

/// PEFT 0.21.2 `LoraConfig` options calibra does not implement, with the default (inert) value each
/// must have: `LoraConfig().to_dict()` (checked against `tests/fixtures/lora_families/
/// peft_lora_config_defaults.json`, written by scripts/golden/lora_peft_families.py).
pub const PEFT_INERT_OPTIONS: &[(&str, &str)] = &[
    ("alora_invocation_tokens", "null"),
    ("arrow_config", "null"),
    ("corda_config", "null"),
    ("ensure_weight_tying", "false"),
    ("eva_config", "null"),
    ("kasa_config", "null"),
    ("layer_replication", "null"),
    ("loftq_config", "{}"),
    ("lora_ga_config", "null"),
    ("megatron_config", "null"),
    ("megatron_core", "\"megatron.core\""),
    ("monteclora_config", "null"),
    ("qalora_group_size", "16"),
    ("target_parameters", "null"),
    ("trainable_token_indices", "null"),
    ("use_bdlora", "null"),
    ("use_qalora", "false"),
    ("velora_config", "null"),
];

/// Keys that describe an adapter without changing what it computes; any value is accepted.
pub const PEFT_METADATA_KEYS: &[&str] = &["auto_mapping", "peft_version"];

/// `layers_to_transform`: one index or a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LayerIndices {
    One(usize),
    Many(Vec<usize>),
}

/// `layers_pattern`: one name or a list (e.g. `"layers"`, `"layer"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LayerPattern {
    One(String),
    Many(Vec<String>),
}

impl Default for LoraConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("every field has a default")
    }
}

impl LoraConfig {
    /// calibra's ViT default, following CRS-Bench: r 8, alpha 16, dropout 0.05 on the attention query
    /// and value projections (transformers 5.x `q_proj`/`v_proj`, 4.x `query`/`value`).
    pub fn vit_default() -> Self {
        LoraConfig {
            r: 8,
            lora_alpha: 16.0,
            lora_dropout: 0.05,
            target_modules: Some(TargetModules::Names(
                ["q_proj", "v_proj", "query", "value"].iter().map(|s| s.to_string()).collect(),
            )),
            ..LoraConfig::default()
        }
    }

    /// Reject what this implementation does not do, with the field named.
    pub fn validate(&self) -> Result<(), LoraError> {
        let bad = |field: &str, why: String| Err(LoraError::Config { field: field.to_string(), why });
        if self.peft_type != "LORA" {
            return bad("peft_type", format!("expected \"LORA\", found {:?}", self.peft_type));
        }
        if self.r == 0 {
            return bad("r", "the rank must be at least 1".into());
        }
        if !self.lora_alpha.is_finite() || self.lora_alpha <= 0.0 {
            return bad("lora_alpha", format!("must be a positive number, found {}", self.lora_alpha));
        }
        if !(0.0..1.0).contains(&self.lora_dropout) {
            return bad("lora_dropout", format!("must be in [0, 1), found {}", self.lora_dropout));
        }
        if self.bias != "none" {
            return bad("bias", format!("only \"none\" is supported, found {:?}", self.bias));
        }
        if self.fan_in_fan_out {
            return bad("fan_in_fan_out", "Conv1D-layout weights are not supported".into());
        }
        if self.use_dora {
            return bad("use_dora", "DoRA is not supported".into());
        }
        if self.lora_bias {
            return bad("lora_bias", "a bias on lora_B is not supported".into());
        }
        if self.init_lora_weights == LoraInit::Disabled {
            return bad("init_lora_weights", "false (random B) is not supported".into());
        }
        if self.target_modules.is_none() {
            return bad("target_modules", "must be given (PEFT has no default for these encoders)".into());
        }
        if matches!(&self.target_modules, Some(TargetModules::Regex(r)) if r == "all-linear") {
            return bad(
                "target_modules",
                "\"all-linear\" is not expanded here; list the module names instead (e.g. [\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"out_proj\", \"fc1\", \"fc2\"])".into(),
            );
        }
        // PEFT's own LoraConfig.__post_init__ checks.
        if matches!(self.target_modules, Some(TargetModules::Regex(_))) {
            if self.layers_to_transform.is_some() {
                return bad(
                    "layers_to_transform",
                    "cannot be used when `target_modules` is a string (PEFT refuses it too)".into(),
                );
            }
            if self.layers_pattern.is_some() {
                return bad(
                    "layers_pattern",
                    "cannot be used when `target_modules` is a string (PEFT refuses it too)".into(),
                );
            }
        }
        let pattern_given = match &self.layers_pattern {
            Some(LayerPattern::One(p)) => !p.is_empty(),
            Some(LayerPattern::Many(v)) => !v.is_empty(),
            None => false,
        };
        if pattern_given && self.layers_to_transform.is_none() {
            return bad("layers_pattern", "needs `layers_to_transform` too (PEFT refuses it alone)".into());
        }
        for (key, value) in &self.other_options {
            if PEFT_METADATA_KEYS.contains(&key.as_str()) {
                continue;
            }
            match PEFT_INERT_OPTIONS.iter().find(|(k, _)| k == key) {
                Some((_, default)) => {
                    let default: serde_json::Value = serde_json::from_str(default).expect("static JSON");
                    if *value != default {
                        return bad(
                            key,
                            format!(
                                "PEFT option not implemented here; only its default {default} is accepted, found {value}"
                            ),
                        );
                    }
                }
                None => {
                    let inert = match value {
                        serde_json::Value::Null | serde_json::Value::Bool(false) => true,
                        serde_json::Value::Array(a) => a.is_empty(),
                        serde_json::Value::Object(o) => o.is_empty(),
                        _ => false,
                    };
                    if !inert {
                        return bad(
                            key,
                            format!(
                                "unknown option (not in PEFT 0.21.2's LoraConfig) with value {value}; refused rather than ignored"
                            ),
                        );
                    }
                }
            }
        }
        for m in self.modules_to_save.iter().flatten() {
            modules_to_save_regex(m)?;
        }
        if let Some(LayerPattern::One(p)) = &self.layers_pattern {
            layer_regex(Some(p))?;
        }
        if let Some(LayerPattern::Many(v)) = &self.layers_pattern {
            for p in v {
                layer_regex(Some(p))?;
            }
        }
        for t in [&self.target_modules, &self.exclude_modules].into_iter().flatten() {
            if let TargetModules::Regex(r) = t {
                full_regex(r)?;
            }
        }
        for (field, patterns) in [
            ("rank_pattern", self.rank_pattern.keys().collect::<Vec<_>>()),
            ("alpha_pattern", self.alpha_pattern.keys().collect()),
        ] {
            for p in patterns {
                pattern_regex(p)
                    .map_err(|e| LoraError::Config { field: format!("{field}.{p}"), why: e.to_string() })?;
            }
        }
        Ok(())
    }

    /// Is the module called `name` wrapped? PEFT 0.21.2's `check_target_module_exists`, rule for rule:
    ///
    /// 1. `exclude_modules` (a list: exact name or `.`-suffix; a string: full regex match) → no;
    /// 2. a name matching a `modules_to_save` entry (`(^|.*\.){m}($|\..*)`, the entry as a regex) → no;
    /// 3. `target_modules` a string → its full regex match decides, and `layers_to_transform` is not
    ///    consulted (as in PEFT);
    /// 4. a list entry equal to the whole name → yes, again without `layers_to_transform`;
    /// 5. a list entry that is a `.`-suffix of the name → yes, unless `layers_to_transform` is set
    ///    (non-empty): then the layer index is the first number after `{layers_pattern}.` (any pattern
    ///    in the list, tried in order; none or empty: the first `X.Y.<n>.` segment), and the module is
    ///    wrapped only when that index is listed (no index found → no).
    pub fn wraps(&self, name: &str) -> Result<bool, LoraError> {
        let Some(targets) = &self.target_modules else { return Ok(false) };
        if let Some(exclude) = &self.exclude_modules
            && exclude.matches(name)?
        {
            return Ok(false);
        }
        for m in self.modules_to_save.iter().flatten() {
            if modules_to_save_regex(m)?.is_match(name) {
                return Ok(false);
            }
        }
        let names = match targets {
            TargetModules::Regex(_) => return targets.matches(name),
            TargetModules::Names(names) => names,
        };
        if names.iter().any(|t| t == name) {
            return Ok(true);
        }
        if !names.iter().any(|t| name.ends_with(&format!(".{t}"))) {
            return Ok(false);
        }
        let wanted: Vec<usize> = match &self.layers_to_transform {
            None => return Ok(true),
            Some(LayerIndices::Many(v)) if v.is_empty() => return Ok(true),
            Some(LayerIndices::One(i)) => vec![*i],
            Some(LayerIndices::Many(v)) => v.clone(),
        };
        let patterns: Vec<&str> = match &self.layers_pattern {
            Some(LayerPattern::One(p)) if !p.is_empty() => vec![p.as_str()],
            Some(LayerPattern::Many(v)) if !v.is_empty() => v.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        };
        let index = if patterns.is_empty() {
            layer_regex(None)?.captures(name).map(|c| c["idx"].to_string())
        } else {
            let mut found = None;
            for p in patterns {
                if let Some(c) = layer_regex(Some(p))?.captures(name) {
                    found = Some(c["idx"].to_string());
                    break;
                }
            }
            found
        };
        Ok(index.and_then(|i| i.parse::<usize>().ok()).is_some_and(|i| wanted.contains(&i)))
    }

    /// The rank and alpha for the module called `name` (`rank_pattern` / `alpha_pattern` override
    /// `r` / `lora_alpha`; the first pattern in key order that matches `(.*\.)?(pattern)$` wins).
    pub fn rank_and_alpha(&self, name: &str) -> (usize, f64) {
        let r = first_pattern(&self.rank_pattern, name).copied().unwrap_or(self.r);
        let alpha = first_pattern(&self.alpha_pattern, name).copied().unwrap_or(self.lora_alpha);
        (r, alpha)
    }

    /// The branch scale s for rank `r` and `alpha`.
    pub fn scale(&self, r: usize, alpha: f64) -> f64 {
        if self.use_rslora { alpha / (r as f64).sqrt() } else { alpha / r as f64 }
    }
}

fn first_pattern<'a, T>(patterns: &'a BTreeMap<String, T>, name: &str) -> Option<&'a T> {
    patterns
        .iter()
        .find(|(p, _)| pattern_regex(p).map(|re| re.is_match(name)).unwrap_or(false))
        .map(|(_, v)| v)
}

/// PEFT's layer-index expressions (`re.match`, so anchored at the start; lazy, so the first index).
fn layer_regex(pattern: Option<&str>) -> Result<Regex, LoraError> {
    let expr = match pattern {
        None => r"^.*?\.[^.]*\.(?P<idx>\d+)\.".to_string(),
        Some(p) => format!(r"^(?:(?:^|.*?\.){p}\.(?P<idx>\d+)\.)"),
    };
    Regex::new(&expr).map_err(|e| LoraError::Config { field: "layers_pattern".into(), why: e.to_string() })
}

/// PEFT's `modules_to_save` exclusion: `re.match(rf"(^|.*\.){m}($|\..*)", key)`.
fn modules_to_save_regex(m: &str) -> Result<Regex, LoraError> {
    Regex::new(&format!(r"^(?:(^|.*\.){m}($|\..*))"))
        .map_err(|e| LoraError::Config { field: format!("modules_to_save.{m}"), why: e.to_string() })
}

fn pattern_regex(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!(r"^(.*\.)?({pattern})$"))
}

fn full_regex(pattern: &str) -> Result<Regex, LoraError> {
    Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| LoraError::Config { field: "target_modules".into(), why: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_peft_defaults() {
        let c = LoraConfig::default();
        assert_eq!((c.r, c.lora_alpha, c.lora_dropout), (8, 8.0, 0.0));
        assert_eq!(c.bias, "none");
        assert_eq!(c.init_lora_weights, LoraInit::KaimingUniform);
        assert!(!c.use_rslora && !c.use_dora && !c.fan_in_fan_out);
    }

    #[test]
    fn unknown_fields_are_ignored_and_init_forms_parse() {
        let c: LoraConfig = serde_json::from_str(
            r#"{"peft_type":"LORA","r":4,"lora_alpha":16,"target_modules":["q_proj"],
                "megatron_config":null,"init_lora_weights":"gaussian","corda_config":null}"#,
        )
        .unwrap();
        assert_eq!(c.r, 4);
        assert_eq!(c.init_lora_weights, LoraInit::Gaussian);
        assert!(serde_json::from_str::<LoraConfig>(r#"{"init_lora_weights":"pissa"}"#).is_err());
    }

    #[test]
    fn list_targets_match_suffixes_and_regex_targets_match_whole_names() {
        let list = TargetModules::Names(vec!["q_proj".into()]);
        assert!(list.matches("vit.layers.0.attention.q_proj").unwrap());
        assert!(!list.matches("vit.layers.0.attention.xq_proj").unwrap());
        let re = TargetModules::Regex(r".*\.(q_proj|v_proj)".into());
        assert!(re.matches("vit.layers.1.attention.v_proj").unwrap());
        assert!(!re.matches("vit.layers.1.attention.v_proj.extra").unwrap());
    }

    #[test]
    fn exclusions_layers_and_patterns() {
        let mut c = LoraConfig::vit_default();
        c.exclude_modules = Some(TargetModules::Names(vec!["layers.2.attention.q_proj".into()]));
        assert!(c.wraps("vit.layers.1.attention.q_proj").unwrap());
        assert!(!c.wraps("vit.layers.2.attention.q_proj").unwrap());
        assert!(!c.wraps("vit.layers.1.mlp.fc1").unwrap());
        c.layers_to_transform = Some(LayerIndices::Many(vec![0]));
        c.layers_pattern = Some(LayerPattern::One("layers".into()));
        assert!(c.wraps("vit.layers.0.attention.v_proj").unwrap());
        assert!(!c.wraps("vit.layers.1.attention.v_proj").unwrap());
        c.rank_pattern.insert(r"layers\.0\.attention\.v_proj".into(), 2);
        assert_eq!(c.rank_and_alpha("vit.layers.0.attention.v_proj").0, 2);
        assert_eq!(c.rank_and_alpha("vit.layers.0.attention.q_proj").0, 8);
        c.use_rslora = true;
        assert_eq!(c.scale(4, 16.0), 8.0);
    }

    /// PEFT 0.21.2 `check_target_module_exists`, case by case (each expectation is what that function
    /// returns for the same config and key).
    #[test]
    fn peft_matching_rules_case_by_case() {
        let cfg = |json: &str| -> LoraConfig { serde_json::from_str(json).unwrap() };
        // modules_to_save is never wrapped, even when a target names it.
        let c = cfg(r#"{"target_modules": ["classifier", "q_proj"], "modules_to_save": ["classifier"]}"#);
        assert!(!c.wraps("classifier").unwrap());
        assert!(c.wraps("vit.layers.0.attention.q_proj").unwrap());
        // A list entry equal to the whole name skips layers_to_transform; a suffix entry does not.
        let c = cfg(
            r#"{"target_modules": ["vit.layers.1.attention.q_proj", "v_proj"], "layers_to_transform": [0]}"#,
        );
        assert!(c.wraps("vit.layers.1.attention.q_proj").unwrap());
        assert!(!c.wraps("vit.layers.1.attention.v_proj").unwrap());
        assert!(c.wraps("vit.layers.0.attention.v_proj").unwrap());
        // Without layers_pattern the index is the first `X.Y.<n>.` segment (lazy), and a name without
        // one (SigLIP's head) is not wrapped.
        let c = cfg(r#"{"target_modules": ["fc1"], "layers_to_transform": 1}"#);
        assert!(c.wraps("vision_model.encoder.layers.1.mlp.fc1").unwrap());
        assert!(!c.wraps("vision_model.head.mlp.fc1").unwrap());
        let c = cfg(r#"{"target_modules": ["fc1"], "layers_to_transform": [0]}"#);
        assert!(c.wraps("a.blocks.0.experts.3.fc1").unwrap(), "the first index, not the last");
        // layers_pattern is a regex and may start the name; an empty list of layers means all.
        let c = cfg(
            r#"{"target_modules": ["q_proj"], "layers_to_transform": [1], "layers_pattern": "lay(er|ers)"}"#,
        );
        assert!(c.wraps("layer.1.attention.q_proj").unwrap());
        assert!(c.wraps("dinov2.encoder.layer.1.attention.q_proj").unwrap());
        assert!(!c.wraps("dinov2.encoder.layer.0.attention.q_proj").unwrap());
        let c = cfg(r#"{"target_modules": ["q_proj"], "layers_to_transform": []}"#);
        assert!(c.wraps("vit.layers.5.attention.q_proj").unwrap());
        // A string exclude is a full regex match.
        let c = cfg(r#"{"target_modules": ["q_proj"], "exclude_modules": ".*layers\\.0\\..*"}"#);
        assert!(!c.wraps("vit.layers.0.attention.q_proj").unwrap());
        assert!(c.wraps("vit.layers.10.attention.q_proj").unwrap());
        // PEFT's own config checks.
        let c = cfg(r#"{"target_modules": ["q_proj"], "layers_pattern": "layers"}"#);
        assert!(c.validate().unwrap_err().to_string().contains("`layers_pattern`"));
        let c =
            cfg(r#"{"target_modules": ".*q_proj", "layers_pattern": "layers", "layers_to_transform": 0}"#);
        assert!(c.validate().unwrap_err().to_string().contains("`layers_to_transform`"));
        let c = cfg(r#"{"target_modules": "(unclosed"}"#);
        assert!(c.validate().unwrap_err().to_string().contains("`target_modules`"));
    }

    #[test]
    fn validation_names_the_field() {
        let mut c = LoraConfig::vit_default();
        c.use_dora = true;
        assert!(c.validate().unwrap_err().to_string().contains("use_dora"));
        let c = LoraConfig::default();
        assert!(c.validate().unwrap_err().to_string().contains("target_modules"));
    }
}
