//! Explicit key-remapping tables between Hugging Face checkpoint names and module paths.

use regex::Regex;

use crate::error::ModelError;

/// One remapping rule: a Hugging Face key prefix and the module-path prefix it maps to.
///
/// Both sides are *templates*: literal text where `{i}` stands for a decimal index (a layer
/// number). A template compiles to the anchored regex `^<escaped text with {i} → (\d+)>` and
/// the replacement `<other side with {i} → the captured index>`, so every rule is a regex pair
/// that can be applied in either direction.
#[derive(Debug, Clone)]
pub struct KeyRule {
    hf_to_burn: (Regex, String),
    burn_to_hf: (Regex, String),
    /// `true`: also used when saving (the rule defines the layout written to disk).
    save: bool,
}

fn compile_template(from: &str, to: &str) -> Result<(Regex, String), ModelError> {
    let n_from = from.matches("{i}").count();
    let n_to = to.matches("{i}").count();
    if n_from != n_to {
        return Err(ModelError::RemapPattern {
            pattern: format!("{from} -> {to}"),
            message: format!("'{{i}}' appears {n_from} times on the left and {n_to} on the right"),
        });
    }
    let mut pattern = String::from("^");
    for (k, part) in from.split("{i}").enumerate() {
        if k > 0 {
            pattern.push_str(r"(\d+)");
        }
        pattern.push_str(&regex::escape(part));
    }
    let mut replacement = String::new();
    for (k, part) in to.split("{i}").enumerate() {
        if k > 0 {
            replacement.push_str(&format!("${{{k}}}"));
        }
        replacement.push_str(&part.replace('$', "$$"));
    }
    let re =
        Regex::new(&pattern).map_err(|e| ModelError::RemapPattern { pattern, message: e.to_string() })?;
    Ok((re, replacement))
}

/// A family's table: prefixes to strip, ordered rules (first match wins), and keys that are
/// deliberately not loaded (heads, mask tokens).
///
/// ```
/// use calibra_models::hf::KeyMap;
/// let map = KeyMap::new("vit")
///     .strip_prefix("vit.")
///     .rule("encoder.layer.{i}.attention.attention.query.", "blocks.{i}.attn.q_proj.").unwrap()
///     .load_only("layers.{i}.attention.q_proj.", "blocks.{i}.attn.q_proj.").unwrap()
///     .ignore(r"^classifier\.").unwrap();
/// assert_eq!(map.to_burn("vit.encoder.layer.3.attention.attention.query.weight"), "blocks.3.attn.q_proj.base.weight");
/// assert_eq!(map.to_burn("layers.3.attention.q_proj.bias"), "blocks.3.attn.q_proj.base.bias");
/// assert_eq!(map.to_hf("blocks.3.attn.q_proj.base.weight"), "encoder.layer.3.attention.attention.query.weight");
/// assert!(map.is_ignored("classifier.weight"));
/// ```
#[derive(Debug, Clone)]
pub struct KeyMap {
    family: String,
    prefixes: Vec<String>,
    rules: Vec<KeyRule>,
    raw: Vec<(Regex, String)>,
    ignore: Vec<Regex>,
}

impl KeyMap {
    /// An empty table for `family` (used in error messages). Keys not matched by any rule keep
    /// their name (after prefix stripping).
    pub fn new(family: impl Into<String>) -> Self {
        Self {
            family: family.into(),
            prefixes: Vec::new(),
            rules: Vec::new(),
            raw: Vec::new(),
            ignore: Vec::new(),
        }
    }

    /// The family name.
    pub fn family(&self) -> &str {
        &self.family
    }

    /// Strips `prefix` from file keys that start with it (e.g. `vit.` in
    /// `ViTForImageClassification` checkpoints) before the rules run.
    pub fn strip_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefixes.push(prefix.into());
        self
    }

    /// A two-way rule: loads `hf` names and writes them on save.
    pub fn rule(mut self, hf: &str, burn: &str) -> Result<Self, ModelError> {
        self.rules.push(KeyRule {
            hf_to_burn: compile_template(hf, burn)?,
            burn_to_hf: compile_template(burn, hf)?,
            save: true,
        });
        Ok(self)
    }

    /// A load-only rule: an alternative name accepted on load (e.g. transformers 5.x in-memory
    /// names) but never written.
    pub fn load_only(mut self, hf: &str, burn: &str) -> Result<Self, ModelError> {
        self.rules.push(KeyRule {
            hf_to_burn: compile_template(hf, burn)?,
            burn_to_hf: compile_template(burn, hf)?,
            save: false,
        });
        Ok(self)
    }

    /// A raw load-only regex pair (`regex` crate syntax, `$1` captures), applied after the
    /// templated rules to keys no template matched.
    pub fn regex(mut self, pattern: &str, replacement: &str) -> Result<Self, ModelError> {
        let re = Regex::new(pattern)
            .map_err(|e| ModelError::RemapPattern { pattern: pattern.into(), message: e.to_string() })?;
        self.raw.push((re, replacement.into()));
        Ok(self)
    }

    /// File keys matching `pattern` (tested after prefix stripping) are not loaded and not
    /// reported as unused.
    pub fn ignore(mut self, pattern: &str) -> Result<Self, ModelError> {
        let re = Regex::new(pattern)
            .map_err(|e| ModelError::RemapPattern { pattern: pattern.into(), message: e.to_string() })?;
        self.ignore.push(re);
        Ok(self)
    }

    fn stripped<'a>(&self, key: &'a str) -> &'a str {
        self.prefixes.iter().find_map(|p| key.strip_prefix(p.as_str())).unwrap_or(key)
    }

    /// Whether a file key is on the ignore list.
    pub fn is_ignored(&self, key: &str) -> bool {
        let k = self.stripped(key);
        self.ignore.iter().any(|re| re.is_match(k))
    }

    /// File key → module path (first matching rule wins; unmatched keys pass through). The
    /// projections of the shared layers (`q_proj`, `k_proj`, `v_proj`, `o_proj`, `fc1`, `fc2`) are
    /// [`LoraLinear`](crate::lora::LoraLinear)s, whose wrapped `Linear` sits under `.base`: their
    /// `weight` / `bias` paths get that segment inserted.
    pub fn to_burn(&self, key: &str) -> String {
        with_lora_base(&self.to_burn_unwrapped(key))
    }

    fn to_burn_unwrapped(&self, key: &str) -> String {
        let k = self.stripped(key);
        for r in &self.rules {
            let (re, rep) = &r.hf_to_burn;
            if re.is_match(k) {
                return re.replace(k, rep.as_str()).into_owned();
            }
        }
        for (re, rep) in &self.raw {
            if re.is_match(k) {
                return re.replace(k, rep.as_str()).into_owned();
            }
        }
        k.to_string()
    }

    /// Module path → the file key written on save (first matching two-way rule; unmatched
    /// paths pass through).
    pub fn to_hf(&self, path: &str) -> String {
        let path = &without_lora_base(path);
        for r in self.rules.iter().filter(|r| r.save) {
            let (re, rep) = &r.burn_to_hf;
            if re.is_match(path) {
                return re.replace(path, rep.as_str()).into_owned();
            }
        }
        path.to_string()
    }
}

/// `….q_proj.weight` → `….q_proj.base.weight` (and the other LoRA-capable projections).
fn with_lora_base(path: &str) -> String {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^(.*\b(?:q_proj|k_proj|v_proj|o_proj|fc1|fc2))\.(weight|bias)$").expect("static regex")
    });
    re.replace(path, "$1.base.$2").into_owned()
}

/// The inverse of [`with_lora_base`].
fn without_lora_base(path: &str) -> String {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^(.*\b(?:q_proj|k_proj|v_proj|o_proj|fc1|fc2))\.base\.(weight|bias)$")
            .expect("static regex")
    });
    re.replace(path, "$1.$2").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_round_trip_and_first_rule_wins() {
        let map = KeyMap::new("t")
            .rule("encoder.layer.{i}.output.dense.", "blocks.{i}.mlp.fc2.")
            .unwrap()
            .rule("encoder.layer.{i}.attention.output.dense.", "blocks.{i}.attn.o_proj.")
            .unwrap();
        assert_eq!(map.to_burn("encoder.layer.10.output.dense.weight"), "blocks.10.mlp.fc2.base.weight");
        assert_eq!(
            map.to_burn("encoder.layer.2.attention.output.dense.bias"),
            "blocks.2.attn.o_proj.base.bias"
        );
        assert_eq!(
            map.to_hf("blocks.2.attn.o_proj.base.bias"),
            "encoder.layer.2.attention.output.dense.bias"
        );
        assert_eq!(map.to_burn("layernorm.weight"), "layernorm.weight");
    }

    #[test]
    fn template_dots_are_literal() {
        let map = KeyMap::new("t").rule("a.b.", "x.").unwrap();
        assert_eq!(map.to_burn("aXb.c"), "aXb.c");
        assert_eq!(map.to_burn("a.b.c"), "x.c");
    }

    #[test]
    fn unbalanced_template_is_an_error() {
        let err = KeyMap::new("t").rule("a.{i}.", "b.").unwrap_err().to_string();
        assert!(err.contains("a.{i}."), "{err}");
    }
}
