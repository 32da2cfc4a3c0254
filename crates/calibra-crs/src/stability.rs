//! Stability of the CRS ranking (spec §5.2–5.3): reference-panel perturbations (leave-one-encoder-out,
//! random sub-panels), insertion trials (fixed reference vs cohort recomputation), and Dirichlet-random
//! axis-weight and component-weight perturbations.
//!
//! Agreement with the full-panel ranking is Kendall τ-b between the full-panel CRS of the encoders
//! involved and their perturbed CRS (ties honoured), and the top-k overlap `|top_k(full) ∩ top_k(pert)| / k`
//! where `top_k(full)` is the best k of the full-panel ranking restricted to the encoders involved.
//! Ranks are ordinal (ties broken by input order) as everywhere in calibra.
//!
//! Weight draws are flat Dirichlet (uniform on the simplex) by default, or Dirichlet centred on the
//! reference's weights with a chosen concentration ([`StabilityConfig::weight_concentration`]).
//!
//! Every analysis draws from its own ChaCha8 stream of `seed` (stream ids [`STREAM_SUBPANELS`]...), so
//! the numbers are fixed by the seed, independent of the other analyses' sizes and of thread count
//! (everything here runs on one thread: the analyses are cheap).

use crate::dirichlet::{dirichlet, flat_dirichlet};
use crate::error::CrsError;
use crate::profile::Profile;
use crate::reference::{Reference, ReferenceConfig};
use crate::score::{AxisWeights, ComponentWeights, ScoreWeights, ordinal_ranks};
use calibra_metrics::kendall_tau_b;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// ChaCha stream of the random sub-panels.
pub const STREAM_SUBPANELS: u64 = 1;
/// ChaCha stream of the insertion trials.
pub const STREAM_INSERTION: u64 = 2;
/// ChaCha stream of the axis-weight draws.
pub const STREAM_AXIS_WEIGHTS: u64 = 3;
/// ChaCha stream of the component-weight draws.
pub const STREAM_COMPONENT_WEIGHTS: u64 = 4;

/// What to run. [`StabilityConfig::paper`] is the CRS-Bench design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StabilityConfig {
    /// Seed of every random draw.
    pub seed: u64,
    /// Sizes of the random sub-panels (each in `2..=|R|`).
    pub subpanel_sizes: Vec<usize>,
    /// Random sub-panels drawn per size (without replacement within a sub-panel).
    pub subpanels_per_size: usize,
    /// Insertion trials: the panel is split at random into a base and `inserted_per_trial` newcomers.
    pub insertion_trials: usize,
    /// Newcomers per insertion trial (the base keeps `|R| − inserted_per_trial ≥ 2` encoders).
    pub inserted_per_trial: usize,
    /// Dirichlet axis-weight draws (component weights kept).
    pub axis_weight_draws: usize,
    /// Dirichlet component-weight draws (axis weights kept).
    pub component_weight_draws: usize,
    /// `None`: flat Dirichlet draws (uniform on the simplex). `Some(c)`: draws centred on the reference's
    /// weights `w`, `Dirichlet(c · w)`, so `E[draw] = w` and `Var[draw_i] = w_i (1 − w_i) / (c + 1)`.
    pub weight_concentration: Option<f64>,
    /// `k` of the top-k overlap (capped by the number of encoders compared).
    pub top_k: usize,
}

impl StabilityConfig {
    /// The paper's design (§3.6): 200 random sub-panels at sizes 12 and 10, 30 random 12 + 3 insertion
    /// trials, 500 axis-weight and 500 component-weight draws (flat Dirichlet: the paper does not state a
    /// concentration), top-3.
    pub fn paper(seed: u64) -> Self {
        StabilityConfig {
            seed,
            subpanel_sizes: vec![12, 10],
            subpanels_per_size: 200,
            insertion_trials: 30,
            inserted_per_trial: 3,
            axis_weight_draws: 500,
            component_weight_draws: 500,
            weight_concentration: None,
            top_k: 3,
        }
    }
}

/// Agreement of a family of perturbed rankings with the full-panel ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// Perturbations evaluated.
    pub trials: usize,
    /// Perturbations skipped because a sub-panel had no spread on an axis (its anchors are undefined).
    pub skipped_degenerate: usize,
    /// Mean Kendall τ-b (NaN if any τ is undefined, e.g. all perturbed scores equal).
    pub mean_tau: f64,
    /// Minimum Kendall τ-b.
    pub min_tau: f64,
    /// Mean top-k overlap.
    pub mean_top_k_overlap: f64,
    /// Fraction of perturbations whose top-k set equals the full-panel top-k (restricted to the same
    /// encoders).
    pub top_k_unchanged: f64,
}

/// One leave-one-encoder-out panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeaveOneOut {
    /// The encoder left out of the reference.
    pub removed: String,
    /// Kendall τ-b of the remaining encoders' scores vs their full-panel scores.
    pub tau: f64,
    /// Top-k overlap.
    pub top_k_overlap: f64,
}

/// Random sub-panels of one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubpanelAgreement {
    /// Sub-panel size.
    pub size: usize,
    /// Agreement over the sub-panels of this size.
    pub agreement: Agreement,
}

/// Mean, median and maximum of absolute score displacements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Displacement {
    /// Mean |Δ CRS|.
    pub mean: f64,
    /// Median |Δ CRS| (midpoint of the two middle values for an even count).
    pub median: f64,
    /// Maximum |Δ CRS|.
    pub max: f64,
}

/// Insertion trials: how far the base encoders' scores move when newcomers arrive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Insertion {
    /// Trials run.
    pub trials: usize,
    /// Newcomers scored in total.
    pub insertions: usize,
    /// Trials skipped because the base had no spread on an axis.
    pub skipped_degenerate: usize,
    /// Fixed reference: newcomers scored against the base's frozen reference; the base's scores before
    /// vs after (zero by construction; measured, not assumed).
    pub fixed_reference: Displacement,
    /// Cohort recomputation: a new reference built on base ∪ newcomers; the base's scores before vs after.
    pub cohort: Displacement,
    /// Mean Kendall τ-b of the base's ranking before vs after cohort recomputation.
    pub cohort_mean_tau: f64,
}

/// Everything [`stability`] reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StabilityReport {
    /// The configuration run.
    pub config: StabilityConfig,
    /// Full-panel CRS per encoder, in panel order.
    pub full_panel: Vec<(String, f64)>,
    /// One entry per encoder left out, in panel order.
    pub leave_one_out: Vec<LeaveOneOut>,
    /// Agreement over the leave-one-out panels.
    pub leave_one_out_agreement: Agreement,
    /// One entry per configured sub-panel size.
    pub subpanels: Vec<SubpanelAgreement>,
    /// Insertion trials.
    pub insertion: Insertion,
    /// Dirichlet axis-weight perturbations.
    pub axis_weights: Agreement,
    /// Dirichlet component-weight perturbations.
    pub component_weights: Agreement,
}

/// Indices of the best `k` scores among `members` (ordinal ranks, ties by order in `members`), sorted.
fn top_k(scores: &[f64], k: usize) -> Vec<usize> {
    let ranks = ordinal_ranks(scores);
    let mut top: Vec<usize> = (0..scores.len()).filter(|&i| ranks[i] <= k).collect();
    top.sort_unstable();
    top
}

/// Agreement of one perturbed ranking with the full-panel ranking of the same encoders.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RankAgreement {
    /// Kendall τ-b of the perturbed vs the full-panel scores (ties honoured; NaN if either is constant).
    pub tau: f64,
    /// `|top_k(full) ∩ top_k(perturbed)| / k` with `k` capped by the number of encoders.
    pub top_k_overlap: f64,
    /// Whether the two top-k sets are equal.
    pub top_k_unchanged: bool,
}

/// Compare a perturbed ranking with the full one (same encoders, same order; both non-empty).
///
/// # Panics
/// If the lengths differ, a score vector is empty, or `k = 0`.
pub fn rank_agreement(full: &[f64], perturbed: &[f64], k: usize) -> RankAgreement {
    assert!(k > 0 && !full.is_empty(), "rank_agreement needs k ≥ 1 and at least one encoder");
    let k = k.min(full.len());
    let tau = kendall_tau_b(full, perturbed);
    let (a, b) = (top_k(full, k), top_k(perturbed, k));
    let common = a.iter().filter(|i| b.contains(i)).count();
    RankAgreement { tau, top_k_overlap: common as f64 / k as f64, top_k_unchanged: a == b }
}

/// Rebuild the reference on a sub-panel (`members`: sorted indices into `panel`; anchors and peers
/// recomputed with `config`) and compare its ranking with `full_crs` restricted to those members.
/// `None` when the sub-panel has no spread on an axis (its anchors are undefined).
///
/// # Errors
/// The errors of [`Reference::build`] other than [`CrsError::DegenerateAnchor`].
///
/// # Panics
/// If a member index is out of range or `k = 0`.
pub fn subpanel_agreement(
    panel: &[Profile],
    config: &ReferenceConfig,
    full_crs: &[f64],
    members: &[usize],
    k: usize,
) -> Result<Option<RankAgreement>, CrsError> {
    let sub: Vec<Profile> = members.iter().map(|&i| panel[i].clone()).collect();
    let crs: Vec<f64> = match Reference::build(&sub, config.clone()) {
        Ok(r) => r.panel_scores().iter().map(|s| s.components.crs).collect(),
        Err(CrsError::DegenerateAnchor { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let restricted: Vec<f64> = members.iter().map(|&i| full_crs[i]).collect();
    Ok(Some(rank_agreement(&restricted, &crs, k)))
}

/// One insertion trial: the panel minus `newcomers` is the base.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertionTrial {
    /// Indices (into the panel) of the base encoders, in panel order.
    pub base: Vec<usize>,
    /// The base's CRS against the reference built on the base alone.
    pub before: Vec<f64>,
    /// The base's CRS after the newcomers were scored against that frozen reference.
    pub fixed_after: Vec<f64>,
    /// The base's CRS against a reference recomputed on base ∪ newcomers (the cohort).
    pub cohort_after: Vec<f64>,
}

/// Run one insertion trial; `None` when the base has no spread on an axis.
///
/// # Errors
/// The errors of [`Reference::build`] other than a degenerate base, and of [`Reference::score`].
///
/// # Panics
/// If a newcomer index is out of range.
pub fn insertion_trial(
    panel: &[Profile],
    config: &ReferenceConfig,
    newcomers: &[usize],
) -> Result<Option<InsertionTrial>, CrsError> {
    let base: Vec<usize> = (0..panel.len()).filter(|i| !newcomers.contains(i)).collect();
    let base_profiles: Vec<Profile> = base.iter().map(|&i| panel[i].clone()).collect();
    let base_ref = match Reference::build(&base_profiles, config.clone()) {
        Ok(r) => r,
        Err(CrsError::DegenerateAnchor { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let crs = |scores: &[crate::reference::CrsScore]| -> Vec<f64> {
        scores.iter().map(|s| s.components.crs).collect()
    };
    let before = crs(&base_ref.panel_scores());
    // Fixed reference: the newcomers are scored (together with the base) against the frozen base
    // reference; the base's scores are then read again.
    let mut arrivals = base_profiles;
    arrivals.extend(newcomers.iter().map(|&i| panel[i].clone()));
    let fixed_after = crs(&base_ref.score(&arrivals)?[..base.len()]);
    // Cohort recomputation: anchors and peers recomputed on base ∪ newcomers.
    let cohort_after = crs(&Reference::build(&arrivals, config.clone())?.panel_scores()[..base.len()]);
    Ok(Some(InsertionTrial { base, before, fixed_after, cohort_after }))
}

/// Agreement of the full panel's ranking under other weights (anchors and peers unchanged).
///
/// # Panics
/// If `k = 0`.
pub fn weight_agreement(full: &Reference, weights: ScoreWeights, k: usize) -> RankAgreement {
    let crs = |r: &Reference| -> Vec<f64> { r.panel_scores().iter().map(|s| s.components.crs).collect() };
    rank_agreement(&crs(full), &crs(&full.with_weights(weights)), k)
}

#[derive(Default)]
struct AgreementAccumulator {
    taus: Vec<f64>,
    overlaps: Vec<f64>,
    unchanged: usize,
    skipped: usize,
}

impl AgreementAccumulator {
    fn push(&mut self, a: RankAgreement) {
        self.taus.push(a.tau);
        self.overlaps.push(a.top_k_overlap);
        self.unchanged += usize::from(a.top_k_unchanged);
    }

    fn finish(self) -> Agreement {
        let n = self.taus.len();
        let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        let min_tau = if n == 0 || self.taus.iter().any(|t| t.is_nan()) {
            f64::NAN
        } else {
            self.taus.iter().copied().fold(f64::INFINITY, f64::min)
        };
        Agreement {
            trials: n,
            skipped_degenerate: self.skipped,
            mean_tau: mean(&self.taus),
            min_tau,
            mean_top_k_overlap: mean(&self.overlaps),
            top_k_unchanged: if n == 0 { f64::NAN } else { self.unchanged as f64 / n as f64 },
        }
    }
}

fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

fn displacement(mut values: Vec<f64>) -> Displacement {
    if values.is_empty() {
        return Displacement { mean: f64::NAN, median: f64::NAN, max: f64::NAN };
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 { values[n / 2] } else { 0.5 * (values[n / 2 - 1] + values[n / 2]) };
    Displacement { mean: values.iter().sum::<f64>() / n as f64, median, max: values[n - 1] }
}

/// Run every stability analysis on a panel (see the module documentation). The full-panel reference is
/// built from `panel` with `config` (its weights are the unperturbed ones).
///
/// # Errors
/// The errors of [`Reference::build`] on the full panel; [`CrsError::InvalidParameter`] for a sub-panel
/// size outside `2..=|R|`, an insertion split that leaves fewer than 2 base encoders or no newcomer,
/// `top_k = 0`, or a weight concentration that is not a finite number > 0.
pub fn stability(
    panel: &[Profile],
    config: &ReferenceConfig,
    stability: &StabilityConfig,
) -> Result<StabilityReport, CrsError> {
    let full = Reference::build(panel, config.clone())?;
    let full_crs: Vec<f64> = full.panel_scores().iter().map(|s| s.components.crs).collect();
    check_design(panel.len(), stability)?;
    let k = stability.top_k;
    let (leave_one_out, leave_one_out_agreement) = leave_one_out(panel, config, &full_crs, k)?;
    let subpanels = random_subpanels(panel, config, &full_crs, stability)?;
    let insertion = insertion(panel, config, stability)?;
    let axis_weights = axis_weight_agreement(&full, stability)?;
    let component_weights = component_weight_agreement(&full, stability)?;
    Ok(StabilityReport {
        config: stability.clone(),
        full_panel: panel.iter().map(|p| p.encoder.clone()).zip(full_crs.iter().copied()).collect(),
        leave_one_out,
        leave_one_out_agreement,
        subpanels,
        insertion,
        axis_weights,
        component_weights,
    })
}

/// A design that a panel of `n` encoders allows (see [`stability`]'s errors).
fn check_design(n: usize, stability: &StabilityConfig) -> Result<(), CrsError> {
    if stability.top_k == 0 {
        return Err(CrsError::InvalidParameter { name: "top_k", message: "0; need k ≥ 1".into() });
    }
    for &size in &stability.subpanel_sizes {
        if !(2..=n).contains(&size) {
            return Err(CrsError::InvalidParameter {
                name: "subpanel_sizes",
                message: format!("a sub-panel of {size} encoders from a panel of {n}; need 2..={n}"),
            });
        }
    }
    if let Some(c) = stability.weight_concentration
        && !(c.is_finite() && c > 0.0)
    {
        return Err(CrsError::InvalidParameter {
            name: "weight_concentration",
            message: format!("{c}; need a finite concentration > 0"),
        });
    }
    let m = stability.inserted_per_trial;
    if stability.insertion_trials > 0 && (m == 0 || n < m + 2) {
        return Err(CrsError::InvalidParameter {
            name: "inserted_per_trial",
            message: format!("{m} newcomers from a panel of {n}; need ≥ 1 newcomer and ≥ 2 base encoders"),
        });
    }
    Ok(())
}

/// Leave one encoder out: each removal's agreement with the full ranking, and their summary.
fn leave_one_out(
    panel: &[Profile],
    config: &ReferenceConfig,
    full_crs: &[f64],
    k: usize,
) -> Result<(Vec<LeaveOneOut>, Agreement), CrsError> {
    let n = panel.len();
    let mut leave_one_out = Vec::with_capacity(n);
    let mut loo = AgreementAccumulator::default();
    for removed in 0..n {
        let members: Vec<usize> = (0..n).filter(|&i| i != removed).collect();
        if members.len() < 2 {
            break;
        }
        match subpanel_agreement(panel, config, full_crs, &members, k)? {
            Some(a) => {
                leave_one_out.push(LeaveOneOut {
                    removed: panel[removed].encoder.clone(),
                    tau: a.tau,
                    top_k_overlap: a.top_k_overlap,
                });
                loo.push(a);
            }
            None => loo.skipped += 1,
        }
    }
    Ok((leave_one_out, loo.finish()))
}

/// Random sub-panels of each configured size.
fn random_subpanels(
    panel: &[Profile],
    config: &ReferenceConfig,
    full_crs: &[f64],
    stability: &StabilityConfig,
) -> Result<Vec<SubpanelAgreement>, CrsError> {
    let mut rng_sub = rng(stability.seed, STREAM_SUBPANELS);
    let mut subpanels = Vec::with_capacity(stability.subpanel_sizes.len());
    for &size in &stability.subpanel_sizes {
        let mut acc = AgreementAccumulator::default();
        for _ in 0..stability.subpanels_per_size {
            let mut members = rand::seq::index::sample(&mut rng_sub, panel.len(), size).into_vec();
            members.sort_unstable();
            match subpanel_agreement(panel, config, full_crs, &members, stability.top_k)? {
                Some(a) => acc.push(a),
                None => acc.skipped += 1,
            }
        }
        subpanels.push(SubpanelAgreement { size, agreement: acc.finish() });
    }
    Ok(subpanels)
}

/// Insertion trials: how far the base encoders' CRS moves under a fixed reference and a re-anchored one.
fn insertion(
    panel: &[Profile],
    config: &ReferenceConfig,
    stability: &StabilityConfig,
) -> Result<Insertion, CrsError> {
    let m = stability.inserted_per_trial;
    let mut rng_ins = rng(stability.seed, STREAM_INSERTION);
    let (mut fixed, mut cohort, mut cohort_taus) = (Vec::new(), Vec::new(), Vec::new());
    let (mut trials, mut skipped) = (0, 0);
    for _ in 0..stability.insertion_trials {
        let newcomers = rand::seq::index::sample(&mut rng_ins, panel.len(), m).into_vec();
        let Some(trial) = insertion_trial(panel, config, &newcomers)? else {
            skipped += 1;
            continue;
        };
        trials += 1;
        let moved = |after: &[f64]| -> Vec<f64> {
            trial.before.iter().zip(after).map(|(b, a)| (a - b).abs()).collect()
        };
        fixed.extend(moved(&trial.fixed_after));
        cohort.extend(moved(&trial.cohort_after));
        cohort_taus.push(kendall_tau_b(&trial.before, &trial.cohort_after));
    }
    Ok(Insertion {
        trials,
        insertions: trials * m,
        skipped_degenerate: skipped,
        fixed_reference: displacement(fixed),
        cohort: displacement(cohort),
        cohort_mean_tau: if cohort_taus.is_empty() {
            f64::NAN
        } else {
            cohort_taus.iter().sum::<f64>() / cohort_taus.len() as f64
        },
    })
}

/// Axis-weight perturbations on the full panel (anchors and peers unchanged).
fn axis_weight_agreement(full: &Reference, stability: &StabilityConfig) -> Result<Agreement, CrsError> {
    let base_weights = *full.weights();
    let mut rng_axis = rng(stability.seed, STREAM_AXIS_WEIGHTS);
    let mut axis_acc = AgreementAccumulator::default();
    for _ in 0..stability.axis_weight_draws {
        // The same draws as before the optional fifth axis for four axes; five-component draws
        // (Dirichlet of the same form) when the selective axis takes part.
        let base = base_weights.axis.as_slice();
        let axis = match (stability.weight_concentration, base.len()) {
            (None, 4) => AxisWeights::from_slice(&flat_dirichlet::<4>(&mut rng_axis))?,
            (None, _) => AxisWeights::from_slice(&flat_dirichlet::<5>(&mut rng_axis))?,
            (Some(c), 4) => AxisWeights::from_slice(&dirichlet(
                &mut rng_axis,
                &[c * base[0], c * base[1], c * base[2], c * base[3]],
            ))?,
            (Some(c), _) => AxisWeights::from_slice(&dirichlet(
                &mut rng_axis,
                &[c * base[0], c * base[1], c * base[2], c * base[3], c * base[4]],
            ))?,
        };
        axis_acc.push(weight_agreement(full, ScoreWeights { axis, ..base_weights }, stability.top_k));
    }
    Ok(axis_acc.finish())
}

/// Component-weight perturbations on the full panel (anchors and peers unchanged).
fn component_weight_agreement(full: &Reference, stability: &StabilityConfig) -> Result<Agreement, CrsError> {
    let base_weights = *full.weights();
    let mut rng_comp = rng(stability.seed, STREAM_COMPONENT_WEIGHTS);
    let mut comp_acc = AgreementAccumulator::default();
    for _ in 0..stability.component_weight_draws {
        let base = base_weights.component;
        let [d, s, w] = match stability.weight_concentration {
            None => flat_dirichlet::<3>(&mut rng_comp),
            Some(c) => dirichlet(&mut rng_comp, &[c * base.dominance, c * base.ideal, c * base.worst]),
        };
        let component = ComponentWeights::new(d, s, w)?;
        comp_acc.push(weight_agreement(full, ScoreWeights { component, ..base_weights }, stability.top_k));
    }
    Ok(comp_acc.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_overlap_counts_common_members() {
        // Exact by construction: top-2 of full = {0, 1}, of perturbed = {0, 2}.
        let a = rank_agreement(&[0.9, 0.8, 0.1], &[0.9, 0.1, 0.8], 2);
        assert_eq!(a.top_k_overlap, 0.5);
        assert!(!a.top_k_unchanged);
        // One discordant pair of three, no ties: τ = (2 − 1) / 3.
        assert!((a.tau - 1.0 / 3.0).abs() < 1e-15);
        let b = rank_agreement(&[0.3, 0.2], &[0.5, 0.1], 3);
        assert_eq!((b.tau, b.top_k_overlap, b.top_k_unchanged), (1.0, 1.0, true));
    }

    #[test]
    fn displacement_summary_uses_the_midpoint_median() {
        let d = displacement(vec![0.4, 0.0, 0.1, 0.2]);
        assert_eq!((d.median, d.max), (0.5 * (0.1 + 0.2), 0.4));
        assert!((d.mean - 0.175).abs() < 1e-15);
    }
}
