//! [`score_profiles`]: the Clinical Reliability Score of a profiles table (`calibra crs`), against a
//! reference built from the table itself or against a saved (frozen) one.

use crate::frozen_weights::{FrozenWeightsError, check_frozen_weights};
use calibra_crs::{
    AxisEstimators, AxisWeights, ComponentWeights, CrsError, CrsScore, Reference, ReferenceConfig,
    ScoreWeights, ValueScale, ordinal_ranks, read_profiles_csv,
};
use std::path::PathBuf;

/// What to score and against what (`calibra crs`'s options).
#[derive(Debug, Clone, Default)]
pub struct ProfileScoringOptions {
    /// Profiles CSV (`encoder,discrimination,calibration,label_efficiency,robustness[,selective]`).
    pub profiles: PathBuf,
    /// The values are already oriented and normalised into [0, 1] (identity anchors).
    pub normalized: bool,
    /// A saved reference to score against instead of one built from the profiles.
    pub reference: Option<PathBuf>,
    /// Where to save the reference used.
    pub save_reference: Option<PathBuf>,
    pub weights: Option<ComponentWeights>,
    /// Four axis weights, or five with the selective axis.
    pub axis_weights: Option<AxisWeights>,
}

/// The scores of every profile, with the reference they were computed against.
#[derive(Debug, Clone)]
pub struct ProfileScoring {
    /// In the order of the profiles table.
    pub scores: Vec<CrsScore>,
    /// Ordinal rank of each score (1 = best), aligned with `scores`.
    pub ranks: Vec<usize>,
    /// Indices into `scores` by rank.
    pub order: Vec<usize>,
    /// Where the reference came from, in words (the first line of the table).
    pub origin: String,
    pub reference: Reference,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileScoringError {
    /// The profiles table or the saved reference cannot be read, or the reference cannot be saved.
    #[error(transparent)]
    Crs(#[from] CrsError),
    #[error(
        "{}: five axis weights ask for the selective axis, which needs a `selective` column (raw AUGRC \
         per encoder) in the profiles table; add it or give four axis weights",
        .0.display()
    )]
    NoSelectiveColumn(PathBuf),
    #[error(
        "{}: the profiles table has a `selective` column (the fifth axis); give five axis weights \
         (--axis-weights a,b,c,d,e) to score it, or drop the column for the four-axis CRS",
        .0.display()
    )]
    SelectiveColumnUnweighted(PathBuf),
    #[error(
        "{}: the reference was built from {reference} profiles but {} holds {table} profiles{hint}",
        path.display(),
        profiles.display()
    )]
    Scale {
        path: PathBuf,
        reference: &'static str,
        profiles: PathBuf,
        table: &'static str,
        hint: &'static str,
    },
    #[error("{}: the reference's estimators differ from a profiles table's", path.display())]
    Estimators {
        path: PathBuf,
        #[source]
        source: CrsError,
    },
    #[error(transparent)]
    FrozenWeights(#[from] FrozenWeightsError),
    #[error("building a reference from {}", profiles.display())]
    Build {
        profiles: PathBuf,
        #[source]
        source: CrsError,
    },
    #[error("scoring {} against the reference", profiles.display())]
    Score {
        profiles: PathBuf,
        #[source]
        source: CrsError,
    },
}

/// Scores the profiles of `o.profiles`, saves the reference when asked, and logs (one message per
/// call) where it was saved and which encoders lie outside the anchors.
pub fn score_profiles(
    o: &ProfileScoringOptions,
    log: &mut dyn FnMut(&str),
) -> Result<ProfileScoring, ProfileScoringError> {
    let scale = if o.normalized { ValueScale::Normalized } else { ValueScale::Oriented };
    let profiles = read_profiles_csv(&o.profiles, scale)?;
    let selective_column = profiles.first().is_some_and(|p| p.values.len() == 5);
    let selective_weight = o.axis_weights.is_some_and(|w| w.has_selective());
    if selective_weight && !selective_column {
        return Err(ProfileScoringError::NoSelectiveColumn(o.profiles.clone()));
    }
    if selective_column && !selective_weight && o.reference.is_none() {
        return Err(ProfileScoringError::SelectiveColumnUnweighted(o.profiles.clone()));
    }
    let estimators = AxisEstimators {
        selective: selective_column.then(|| AxisEstimators::AUGRC_MSP.to_string()),
        ..AxisEstimators::default()
    };
    let (reference, origin) = match &o.reference {
        Some(path) => {
            let reference = Reference::load(path)?;
            if reference.scale() != scale {
                return Err(ProfileScoringError::Scale {
                    path: path.clone(),
                    reference: reference.scale().name(),
                    profiles: o.profiles.clone(),
                    table: scale.name(),
                    hint: if o.normalized { " (drop --normalized)" } else { " (pass --normalized)" },
                });
            }
            reference
                .check_compatible(&estimators, scale)
                .map_err(|source| ProfileScoringError::Estimators { path: path.clone(), source })?;
            check_frozen_weights(path, &reference, o.weights, o.axis_weights)?;
            let origin = format!("reference {} (|R| = {})", path.display(), reference.panel_len());
            (reference, origin)
        }
        None => {
            let weights = ScoreWeights {
                axis: o.axis_weights.unwrap_or_default(),
                component: o.weights.unwrap_or_default(),
            };
            let config = ReferenceConfig { scale, weights, estimators, ..ReferenceConfig::default() };
            let reference = Reference::build(&profiles, config)
                .map_err(|source| ProfileScoringError::Build { profiles: o.profiles.clone(), source })?;
            let anchors = if o.normalized { "identity anchors" } else { "anchors = panel min/max" };
            (reference, format!("reference built from these {} profiles ({anchors})", profiles.len()))
        }
    };
    let scores = reference
        .score(&profiles)
        .map_err(|source| ProfileScoringError::Score { profiles: o.profiles.clone(), source })?;
    if let Some(path) = &o.save_reference {
        reference.save(path)?;
        log(&format!("saved the reference to {}", path.display()));
    }
    let crs: Vec<f64> = scores.iter().map(|s| s.components.crs).collect();
    let ranks = ordinal_ranks(&crs);
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by_key(|&i| ranks[i]);
    for s in &scores {
        if !s.saturated.is_empty() {
            let axes: Vec<&str> = s.saturated.iter().map(|a| a.name()).collect();
            log(&format!(
                "note: `{}` lies outside the reference anchors on {} (clipped)",
                s.encoder,
                axes.join(", ")
            ));
        }
    }
    Ok(ProfileScoring { scores, ranks, order, origin, reference })
}
