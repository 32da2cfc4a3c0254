//! The loss registry: names, their arguments with defaults, and the parser of loss specs such as
//! `ce`, `focal+mdca`, `0.5*ce+2*mdca` with `key=value` / `loss.key=value` arguments.

use std::collections::BTreeMap;

use super::{
    CrossEntropy, Flsd53, Focal, LabelSmoothing, Loss, LossArgs, LsKind, MarginLabelSmoothing, MaskedBce,
    Mcm, McmTerms, Mdca, RangePenalty, VarianceMode, WeightedSum, ZsNorm,
};
use crate::error::TrainError;

/// One argument a registered loss accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// The key.
    pub key: &'static str,
    /// Its default, as text.
    pub default: &'static str,
    /// What it is.
    pub doc: &'static str,
}

/// One registered loss.
#[derive(Debug, Clone, Copy)]
pub struct LossInfo {
    /// Registry name.
    pub name: &'static str,
    /// One line: what it computes.
    pub summary: &'static str,
    /// Accepted arguments.
    pub params: &'static [ParamInfo],
    build: fn(&LossArgs) -> Result<Box<dyn Loss>, TrainError>,
}

impl LossInfo {
    /// Builds this loss from arguments (keys must be among `params`).
    pub fn build(&self, args: &LossArgs) -> Result<Box<dyn Loss>, TrainError> {
        (self.build)(args)
    }
}

const P_EPS: ParamInfo =
    ParamInfo { key: "eps", default: "0.1", doc: "ε in [0,1]: mass spread over all K classes" };
const P_LS_ALPHA: ParamInfo = ParamInfo {
    key: "alpha",
    default: "0.1",
    doc: "α in [0,1]: mass spread over the K−1 off-target classes",
};
const P_GAMMA: ParamInfo = ParamInfo { key: "gamma", default: "3", doc: "focusing exponent γ >= 0" };
const P_MDCA_BETA: ParamInfo =
    ParamInfo { key: "beta", default: "1", doc: "weight β >= 0 of the MDCA term" };
const P_MARGIN: ParamInfo = ParamInfo { key: "margin", default: "10", doc: "logit-distance margin m >= 0" };
const P_MBLS_LAMBDA: ParamInfo =
    ParamInfo { key: "lambda", default: "0.1", doc: "weight λ >= 0 of the margin term" };
const P_MCM_ALPHA: ParamInfo =
    ParamInfo { key: "alpha", default: "0.1", doc: "weight α of −μ (mean margin)" };
const P_MCM_BETA: ParamInfo =
    ParamInfo { key: "beta", default: "0.01", doc: "weight β of the margin variance" };
const P_VARIANCE: ParamInfo =
    ParamInfo { key: "variance", default: "all_pairs", doc: "`all_pairs` or `per_sample` margin variance" };
const P_ZS_EPS: ParamInfo =
    ParamInfo { key: "eps", default: "1e-12", doc: "ε >= 0 added to the logit range (division guard)" };
const P_PEN_LAMBDA: ParamInfo =
    ParamInfo { key: "lambda", default: "10", doc: "weight λ >= 0 of the range penalty" };

static REGISTRY: &[LossInfo] = &[
    LossInfo { name: "ce", summary: "cross-entropy", params: &[], build: |_| Ok(Box::new(CrossEntropy)) },
    LossInfo {
        name: "ls",
        summary: "label smoothing, torch form: q = (1−ε)·onehot + ε/K",
        params: &[P_EPS],
        build: |a| Ok(Box::new(LabelSmoothing::new(LsKind::Torch, a.f64("eps", 0.1)?)?)),
    },
    LossInfo {
        name: "ls_offtarget",
        summary: "label smoothing, MDCA/MVC-Bench form: q_y = 1−α, q_k = α/(K−1) off target",
        params: &[P_LS_ALPHA],
        build: |a| Ok(Box::new(LabelSmoothing::new(LsKind::OffTarget, a.f64("alpha", 0.1)?)?)),
    },
    LossInfo {
        name: "focal",
        summary: "focal loss −(1−p_t)^γ log p_t",
        params: &[P_GAMMA],
        build: |a| Ok(Box::new(Focal::new(a.f64("gamma", 3.0)?)?)),
    },
    LossInfo {
        name: "flsd53",
        summary: "focal loss with γ = 5 if p_t < 0.2 else 3 (FLSD-53)",
        params: &[],
        build: |_| Ok(Box::new(Flsd53)),
    },
    LossInfo {
        name: "mdca",
        summary: "β·MDCA regulariser (add to ce / focal / ls_offtarget)",
        params: &[P_MDCA_BETA],
        build: |a| Ok(Box::new(Mdca::new(a.f64("beta", 1.0)?)?)),
    },
    LossInfo {
        name: "mbls",
        summary: "CE + λ·mean relu(max_j z_j − z_k − m) (margin-based label smoothing)",
        params: &[P_MARGIN, P_MBLS_LAMBDA],
        build: |a| Ok(Box::new(MarginLabelSmoothing::new(a.f64("margin", 10.0)?, a.f64("lambda", 0.1)?)?)),
    },
    LossInfo {
        name: "mcm",
        summary: "CE − α·μ + β·Var of true-vs-rest margins (MVC-Bench MCM)",
        params: &[P_MCM_ALPHA, P_MCM_BETA, P_VARIANCE],
        build: |a| {
            let variance = a.parsed("variance", VarianceMode::AllPairs)?;
            Ok(Box::new(Mcm::new(a.f64("alpha", 0.1)?, a.f64("beta", 0.01)?, variance, McmTerms::Both)?))
        },
    },
    LossInfo {
        name: "mcm_mean",
        summary: "CE − α·μ (MCM ablation: mean margin only)",
        params: &[P_MCM_ALPHA],
        build: |a| {
            Ok(Box::new(Mcm::new(a.f64("alpha", 0.1)?, 0.0, VarianceMode::AllPairs, McmTerms::MeanOnly)?))
        },
    },
    LossInfo {
        name: "mcm_var",
        summary: "CE + β·Var (MCM ablation: margin variance only)",
        params: &[P_MCM_BETA, P_VARIANCE],
        build: |a| {
            let variance = a.parsed("variance", VarianceMode::AllPairs)?;
            Ok(Box::new(Mcm::new(0.0, a.f64("beta", 0.01)?, variance, McmTerms::VarianceOnly)?))
        },
    },
    LossInfo {
        name: "zs_norm",
        summary: "CE on logits min-max normalised into the zero-shot logit range (ECCV ZS-Norm)",
        params: &[P_ZS_EPS],
        build: |a| Ok(Box::new(ZsNorm::new(a.f64("eps", 1e-12)?)?)),
    },
    LossInfo {
        name: "range_penalty",
        summary: "CE + λ·penalty for logits outside the zero-shot logit range (ECCV Penalty)",
        params: &[P_PEN_LAMBDA],
        build: |a| Ok(Box::new(RangePenalty::new(a.f64("lambda", 10.0)?)?)),
    },
    LossInfo {
        name: "bce_masked",
        summary: "multilabel BCE over observed labels (uncertain / blank masked)",
        params: &[],
        build: |_| Ok(Box::new(MaskedBce)),
    },
];

/// All registered losses.
pub fn registry() -> &'static [LossInfo] {
    REGISTRY
}

fn lookup(name: &str) -> Result<&'static LossInfo, TrainError> {
    REGISTRY.iter().find(|info| info.name == name).ok_or_else(|| TrainError::UnknownLoss {
        name: name.into(),
        known: REGISTRY.iter().map(|i| i.name).collect::<Vec<_>>().join(", "),
    })
}

/// One term of a spec: `weight * name` with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct TermSpec {
    /// Weight of the term in the sum (default 1).
    pub weight: f64,
    /// Registry name.
    pub name: String,
    /// Its `key → value` arguments.
    pub args: BTreeMap<String, String>,
}

/// A parsed loss spec: `term (+ term)*`, each term `[weight*]name`, with arguments routed to terms.
///
/// Arguments are `key=value` (routed to the one term that accepts `key`; an error if none or
/// several do) or `name.key=value` (to the term `name`). A name may appear once per spec.
/// Examples: `("mcm", ["variance=per_sample"])`, `("focal+mdca", ["gamma=1", "beta=1"])`,
/// `("ls_offtarget+mcm", ["ls_offtarget.alpha=0.1", "mcm.alpha=0.2"])`, `("0.5*ce+2*mdca", [])`.
#[derive(Debug, Clone, PartialEq)]
pub struct LossSpec {
    /// The spec as given.
    pub spec: String,
    /// Its terms, in order.
    pub terms: Vec<TermSpec>,
}

impl LossSpec {
    /// Parses `spec` and routes `args` (see the type docs). Errors name the offending term/argument.
    pub fn parse<S: AsRef<str>>(spec: &str, args: &[S]) -> Result<Self, TrainError> {
        let malformed = |reason: String| TrainError::MalformedSpec { spec: spec.into(), reason };
        let mut terms: Vec<TermSpec> = Vec::new();
        if spec.trim().is_empty() {
            return Err(malformed("empty; expected e.g. `ce` or `ce+mdca`".into()));
        }
        for raw in spec.split('+') {
            let raw = raw.trim();
            if raw.is_empty() {
                return Err(malformed("empty term (two `+` in a row, or a leading/trailing `+`)".into()));
            }
            let (weight, name) = match raw.split_once('*') {
                None => (1.0, raw),
                Some((w, name)) => {
                    let weight =
                        w.trim().parse::<f64>().ok().filter(|w| w.is_finite() && *w > 0.0).ok_or_else(
                            || {
                                malformed(format!(
                                    "term `{raw}`: weight `{}` is not a finite number > 0",
                                    w.trim()
                                ))
                            },
                        )?;
                    (weight, name.trim())
                }
            };
            lookup(name)?;
            if terms.iter().any(|t| t.name == name) {
                return Err(malformed(format!("loss `{name}` appears twice")));
            }
            terms.push(TermSpec { weight, name: name.into(), args: BTreeMap::new() });
        }
        for arg in args {
            let arg = arg.as_ref();
            let (key, value) = arg
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .ok_or_else(|| TrainError::MalformedArg { arg: arg.into() })?;
            let (target, key) = match key.split_once('.') {
                Some((loss, key)) => {
                    let idx =
                        terms.iter().position(|t| t.name == loss).ok_or_else(|| TrainError::UnknownArg {
                            key: format!("{loss}.{key}"),
                            losses: format!("`{loss}` (not a term of `{spec}`)"),
                            accepted: accepted_keys(&terms),
                        })?;
                    if !lookup(loss)?.params.iter().any(|p| p.key == key) {
                        return Err(TrainError::UnknownArg {
                            key: key.into(),
                            losses: format!("`{loss}`"),
                            accepted: accepted_keys(&terms[idx..=idx]),
                        });
                    }
                    (idx, key)
                }
                None => {
                    let accepting: Vec<usize> = terms
                        .iter()
                        .enumerate()
                        .filter(|(_, t)| lookup(&t.name).is_ok_and(|i| i.params.iter().any(|p| p.key == key)))
                        .map(|(i, _)| i)
                        .collect();
                    match accepting.as_slice() {
                        [one] => (*one, key),
                        [] => {
                            return Err(TrainError::UnknownArg {
                                key: key.into(),
                                losses: format!("`{spec}`"),
                                accepted: accepted_keys(&terms),
                            });
                        }
                        many => {
                            return Err(TrainError::AmbiguousArg {
                                key: key.into(),
                                losses: many
                                    .iter()
                                    .map(|i| terms[*i].name.clone())
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                example: format!("{}.{key}={value}", terms[many[0]].name),
                            });
                        }
                    }
                }
            };
            let term = &mut terms[target];
            if term.args.insert(key.into(), value.into()).is_some() {
                return Err(TrainError::DuplicateArg { loss: term.name.clone(), key: key.into() });
            }
        }
        Ok(Self { spec: spec.into(), terms })
    }

    /// Builds the loss: the single loss itself for a one-term spec with weight 1, otherwise a
    /// [`WeightedSum`]. Errors: bad values, or terms needing different kinds of targets.
    pub fn build(&self) -> Result<Box<dyn Loss>, TrainError> {
        let mut built: Vec<(f64, Box<dyn Loss>)> = Vec::with_capacity(self.terms.len());
        for term in &self.terms {
            let info = lookup(&term.name)?;
            built.push((term.weight, info.build(&LossArgs::new(info.name, term.args.clone()))?));
        }
        if let Some((_, first)) = built.first() {
            let kind = first.target_kind();
            if let Some((_, other)) = built.iter().find(|(_, l)| l.target_kind() != kind) {
                return Err(TrainError::IncompatibleTerms {
                    spec: self.spec.clone(),
                    reason: format!(
                        "`{}` and `{}` need different kinds of targets",
                        first.name(),
                        other.name()
                    ),
                });
            }
        }
        if built.len() == 1 && built[0].0 == 1.0 {
            return Ok(built.remove(0).1);
        }
        Ok(Box::new(WeightedSum::new(built)?))
    }
}

fn accepted_keys(terms: &[TermSpec]) -> String {
    let mut keys = Vec::new();
    for term in terms {
        if let Ok(info) = lookup(&term.name) {
            keys.extend(info.params.iter().map(|p| format!("{}.{}", term.name, p.key)));
        }
    }
    if keys.is_empty() { "none".into() } else { keys.join(", ") }
}

/// Parses and builds in one call: `build_loss("focal+mdca", &["gamma=1", "beta=1"])`.
pub fn build_loss<S: AsRef<str>>(spec: &str, args: &[S]) -> Result<Box<dyn Loss>, TrainError> {
    LossSpec::parse(spec, args)?.build()
}
