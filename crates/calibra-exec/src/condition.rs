//! The one conversion between a run record's condition (calibra-crs) and the image condition a
//! feature pass or a forward pass applies (calibra-train).

use calibra_crs::Condition;
use calibra_run::ExecError;
use calibra_train::features::FeatureCondition;

/// The image condition of a record condition: its perturbation, or clean (a shift target is another
/// dataset's clean test split).
pub fn feature_condition(condition: &Condition) -> Result<FeatureCondition, ExecError> {
    Ok(match condition {
        Condition::Perturbation { perturbation, severity } => {
            FeatureCondition::parse(&format!("{perturbation}:{severity}"))?
        }
        Condition::Clean | Condition::Shift { .. } => FeatureCondition::Clean,
    })
}

/// The record condition of an image condition (never a shift: that is a dataset, not an image
/// condition).
pub fn record_condition(condition: FeatureCondition) -> Condition {
    match condition {
        FeatureCondition::Clean => Condition::Clean,
        FeatureCondition::Perturbed { perturbation, severity } => Condition::Perturbation {
            perturbation: perturbation.name().to_string(),
            severity: u32::from(severity.level()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perturbation_round_trips_and_a_shift_reads_clean() {
        for text in ["clean", "jpeg:1", "rician-noise:3", "fov-crop:2"] {
            let image = FeatureCondition::parse(text).unwrap();
            assert_eq!(feature_condition(&record_condition(image)).unwrap(), image, "{text}");
        }
        let shift = Condition::Shift { target: "site-b".into() };
        assert_eq!(feature_condition(&shift).unwrap(), FeatureCondition::Clean);
    }
}
