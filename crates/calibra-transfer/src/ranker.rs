//! An InsightRank-style combined ranker (seed 001, §2.5 and §4.5), for image-level tasks.
//!
//! What the paper fixes: every candidate *pair* is compared on ONE indicator chosen by the pair's
//! architecture groups (image-level: transformer–transformer pairs use neighbour-outcome agreement
//! `R`, every other pair uses effective dimensionality `C`); indicators are compared only by their
//! ordering (their units differ); net-win aggregation gives +1 / −1 / 0 for a win / loss / tie and
//! candidates are ranked by their total. The score depends on the pool, cycles are possible.
//!
//! What it leaves open, and what we chose:
//! - how the architecture group is read: here from the candidate's config (`model_type` → family,
//!   `hidden_size` × `num_hidden_layers` → size), see [`ArchGroup::from_config`];
//! - what "size" does: the paper's rule is by family only; [`PairRule`]s may also match a size
//!   relation (same size / different size), and the default rules ignore it (paper-faithful);
//! - orientation: every indicator is "higher is better" (both `R` and `C` are oriented so in the
//!   paper's image-level rule); a rule can flip it;
//! - a missing indicator value (undefined estimator) makes the pair a tie (0 for both);
//! - exact ties in the net score share the average rank (scipy `rankdata` "average").
//!
//! The paper averages `R` over the two deepest representations; callers pass one value per
//! candidate (e.g. that average) in `Candidate::scores`.

use std::collections::BTreeMap;

use crate::TransferError;

/// Coarse architecture family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Transformer,
    Cnn,
    Other,
}

impl Family {
    /// From a Hugging Face `model_type` (or a family name itself).
    pub fn from_model_type(t: &str) -> Family {
        let t = t.to_ascii_lowercase();
        const TRANSFORMERS: [&str; 12] = [
            "transformer",
            "vit",
            "deit",
            "beit",
            "dinov2",
            "swin",
            "swinv2",
            "clip",
            "clip_vision_model",
            "siglip",
            "eva",
            "mae",
        ];
        const CNNS: [&str; 8] =
            ["cnn", "resnet", "convnext", "convnextv2", "efficientnet", "regnet", "densenet", "mobilenet_v2"];
        if TRANSFORMERS.iter().any(|m| t == *m || t.starts_with(&format!("{m}_"))) {
            Family::Transformer
        } else if CNNS.iter().any(|m| t == *m || t.starts_with(m)) {
            Family::Cnn
        } else {
            Family::Other
        }
    }
}

/// A candidate's architecture group: family and a size label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ArchGroup {
    pub family: Family,
    pub size: String,
}

impl ArchGroup {
    /// From a `config.json` (top level, or its `vision_config` for CLIP-style checkpoints):
    /// family from `model_type`, size `"{hidden_size}x{num_hidden_layers}"` (`"?"` when absent).
    pub fn from_config(config: &serde_json::Value) -> ArchGroup {
        let c = config.get("vision_config").filter(|v| v.is_object()).unwrap_or(config);
        let model_type = c
            .get("model_type")
            .or_else(|| config.get("model_type"))
            .and_then(|v| v.as_str())
            .unwrap_or("other");
        let dim = c.get("hidden_size").and_then(|v| v.as_u64());
        let layers = c.get("num_hidden_layers").and_then(|v| v.as_u64());
        let size = match (dim, layers) {
            (Some(d), Some(l)) => format!("{d}x{l}"),
            (Some(d), None) => format!("{d}"),
            _ => "?".to_string(),
        };
        ArchGroup { family: Family::from_model_type(model_type), size }
    }
}

/// One candidate encoder: its group and its estimator values (keys as [`crate::Estimator`] names).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Candidate {
    pub name: String,
    pub group: ArchGroup,
    pub scores: BTreeMap<String, Option<f64>>,
}

/// Which pairs a rule applies to.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairRule {
    /// The two families (unordered); `None` matches any family.
    pub families: (Option<Family>, Option<Family>),
    /// `Some(true)`: only pairs of the same size; `Some(false)`: only different sizes.
    pub same_size: Option<bool>,
    /// The indicator compared, and whether higher wins.
    pub indicator: String,
    pub higher_is_better: bool,
}

impl PairRule {
    fn matches(&self, a: &ArchGroup, b: &ArchGroup) -> bool {
        let fam = |want: Option<Family>, got: Family| want.is_none_or(|w| w == got);
        let (x, y) = self.families;
        let families = (fam(x, a.family) && fam(y, b.family)) || (fam(x, b.family) && fam(y, a.family));
        families && self.same_size.is_none_or(|s| s == (a.size == b.size))
    }
}

/// The ordered rule list (first match wins).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ranker {
    pub rules: Vec<PairRule>,
}

impl Ranker {
    /// Seed 001's image-level rule: transformer–transformer pairs by k-NN outcome agreement (R),
    /// every other pair by effective dimensionality (C); both higher-is-better.
    pub fn insightrank_image_level() -> Self {
        Self {
            rules: vec![
                PairRule {
                    families: (Some(Family::Transformer), Some(Family::Transformer)),
                    same_size: None,
                    indicator: "knn_agreement".into(),
                    higher_is_better: true,
                },
                PairRule {
                    families: (None, None),
                    same_size: None,
                    indicator: "effective_dimensionality".into(),
                    higher_is_better: true,
                },
            ],
        }
    }

    /// Net wins of every candidate (in input order) and its rank (1 = best, ties averaged).
    pub fn rank(&self, candidates: &[Candidate]) -> Result<Vec<RankedCandidate>, TransferError> {
        let n = candidates.len();
        let mut net = vec![0i64; n];
        for i in 0..n {
            for j in i + 1..n {
                let (a, b) = (&candidates[i], &candidates[j]);
                let rule = self.rules.iter().find(|r| r.matches(&a.group, &b.group)).ok_or_else(|| {
                    TransferError::Ranker(format!("no rule covers the pair `{}` / `{}`", a.name, b.name))
                })?;
                let va = a.scores.get(&rule.indicator).copied().flatten();
                let vb = b.scores.get(&rule.indicator).copied().flatten();
                if let (Some(va), Some(vb)) = (va, vb) {
                    let sign = if rule.higher_is_better { 1.0 } else { -1.0 };
                    let (va, vb) = (sign * va, sign * vb);
                    if va > vb {
                        net[i] += 1;
                        net[j] -= 1;
                    } else if vb > va {
                        net[j] += 1;
                        net[i] -= 1;
                    }
                }
            }
        }
        let neg: Vec<f64> = net.iter().map(|&w| -(w as f64)).collect();
        let ranks = calibra_metrics::average_ranks(&neg);
        Ok(candidates
            .iter()
            .zip(net)
            .zip(ranks)
            .map(|((c, net_wins), rank)| RankedCandidate { name: c.name.clone(), net_wins, rank })
            .collect())
    }
}

/// A candidate's place in the combined ranking.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankedCandidate {
    pub name: String,
    pub net_wins: i64,
    /// 1 = best; tied net wins share the average rank.
    pub rank: f64,
}

/// Per-estimator ranks (1 = best, higher value better, ties averaged; undefined values rank last,
/// tied among themselves).
pub fn estimator_ranks(candidates: &[Candidate], estimator: &str) -> Vec<f64> {
    let vals: Vec<f64> = candidates
        .iter()
        .map(|c| c.scores.get(estimator).copied().flatten().map_or(f64::INFINITY, |v| -v))
        .collect();
    calibra_metrics::average_ranks(&vals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(name: &str, family: Family, r: f64, c: f64) -> Candidate {
        let mut scores = BTreeMap::new();
        scores.insert("knn_agreement".to_string(), Some(r));
        scores.insert("effective_dimensionality".to_string(), Some(c));
        Candidate { name: name.into(), group: ArchGroup { family, size: "768x12".into() }, scores }
    }

    #[test]
    fn transformer_pairs_use_r_and_mixed_pairs_use_c() {
        // vit-a beats vit-b on R (0.9 > 0.5) although its C is lower; the CNN has the highest C,
        // so it beats both transformers on C: net wins cnn +2, vit-a 0, vit-b −2.
        let cands = vec![
            cand("vit-a", Family::Transformer, 0.9, 10.0),
            cand("vit-b", Family::Transformer, 0.5, 20.0),
            cand("cnn", Family::Cnn, 0.1, 30.0),
        ];
        let ranked = Ranker::insightrank_image_level().rank(&cands).unwrap();
        let net: Vec<i64> = ranked.iter().map(|r| r.net_wins).collect();
        assert_eq!(net, vec![0, -2, 2]);
        assert_eq!(ranked.iter().map(|r| r.rank).collect::<Vec<_>>(), vec![2.0, 3.0, 1.0]);
        // Pure C would have ranked vit-b above vit-a.
        assert_eq!(estimator_ranks(&cands, "effective_dimensionality"), vec![3.0, 2.0, 1.0]);
    }

    #[test]
    fn missing_values_tie_and_config_groups() {
        let mut a = cand("a", Family::Cnn, 0.0, 5.0);
        a.scores.insert("effective_dimensionality".into(), None);
        let b = cand("b", Family::Cnn, 0.0, 4.0);
        let ranked = Ranker::insightrank_image_level().rank(&[a, b]).unwrap();
        assert_eq!((ranked[0].net_wins, ranked[1].net_wins), (0, 0));
        assert_eq!(ranked[0].rank, 1.5);
        let cfg = serde_json::json!({"model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12});
        assert_eq!(
            ArchGroup::from_config(&cfg),
            ArchGroup { family: Family::Transformer, size: "768x12".into() }
        );
        let clip = serde_json::json!({"model_type": "clip", "vision_config": {"hidden_size": 384, "num_hidden_layers": 6}});
        assert_eq!(ArchGroup::from_config(&clip).size, "384x6");
        assert_eq!(Family::from_model_type("resnet"), Family::Cnn);
    }
}
