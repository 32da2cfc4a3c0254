//! The synthetic captions of the tiny CLIP: per task a family of templates with one `{}` slot that
//! takes a class name exactly as calibra's zero-shot classifier and CoOp read it (the dataset's label
//! name with `_` read as a space), so that a prompt such as `"a photo of a {}."` asked at test time
//! is a caption the model was trained on.
//!
//! Rules (also in the model card):
//! - multiclass / ordinal image: the class name of its label;
//! - multilabel image: one of its present findings, drawn uniformly per (seed, epoch, image); an
//!   image with no present finding (none is: CheXpert's `No Finding` is itself a label) gets
//!   `no finding`;
//! - the template of a task is drawn once per training step (the same phrasing for every image of that
//!   task in the batch), so two images of one class in a batch carry the identical caption and are
//!   positives of each other in the loss.

use calibra_data::{Dataset, Target};
use calibra_models::clip::{MVC_BENCH_TEMPLATES, fill_template};

use crate::pretrain::PretrainError;

/// CLIP's and CoOp's default prompt, MVC-Bench's P1: the first template of every task family.
pub const P1: &str = MVC_BENCH_TEMPLATES[0];

/// Captions of `synth:derm` (multiclass lesions).
pub const DERM_TEMPLATES: [&str; 5] = [
    P1,
    "a dermoscopy image of {}.",
    "a dermoscopy image of a {}.",
    "a skin lesion showing {}.",
    "a close-up photo of a {} on the skin.",
];

/// Captions of `synth:chest` (multilabel findings).
pub const CHEST_TEMPLATES: [&str; 4] =
    [P1, "a chest x-ray showing {}.", "a chest radiograph with {}.", "a frontal chest x-ray: {}."];

/// The subject of a multilabel image without any present label.
pub const NO_FINDING: &str = "no finding";

/// Captions of `synth:fundus` (ordinal grades named `0`…`4`): MVC-Bench's seven diabetic-retinopathy
/// templates P1…P7 (so its template-stability study asks prompts the model was trained on) and one
/// more.
pub fn fundus_templates() -> Vec<String> {
    let mut t: Vec<String> = MVC_BENCH_TEMPLATES.iter().map(|s| s.to_string()).collect();
    t.push("a fundus photograph with diabetic retinopathy grade {}.".into());
    t
}

/// The default template family of a dataset spec: `synth:derm…`, `synth:fundus…`, `synth:chest…`
/// (also `chest-site-b`); `None` for others (give templates explicitly).
pub fn default_templates(spec: &str) -> Option<Vec<String>> {
    let suite = spec.strip_prefix("synth:")?.split('?').next()?;
    let owned = |t: &[&str]| t.iter().map(|s| s.to_string()).collect();
    match suite {
        "derm" => Some(owned(&DERM_TEMPLATES)),
        "fundus" => Some(fundus_templates()),
        "chest" | "chest-site-b" => Some(owned(&CHEST_TEMPLATES)),
        _ => None,
    }
}

/// The class names as zero-shot and CoOp read them: `_` → space.
pub fn classnames(dataset: &Dataset) -> Vec<String> {
    dataset.labels.names.iter().map(|n| n.replace('_', " ")).collect()
}

/// What the caption of sample `row` names: its class, or its `pick`-th present finding (mod their
/// number), or [`NO_FINDING`].
pub fn caption_subject(dataset: &Dataset, names: &[String], row: usize, pick: u64) -> String {
    match &dataset.samples[row].target {
        Target::Class(c) => names[*c].clone(),
        Target::Labels(labels) => {
            let present: Vec<usize> = (0..labels.len()).filter(|&j| labels[j] == Some(true)).collect();
            if present.is_empty() {
                NO_FINDING.to_string()
            } else {
                names[present[(pick % present.len() as u64) as usize]].clone()
            }
        }
    }
}

/// Every caption a task family can produce (templates × subjects), for learning the vocabulary.
pub fn all_captions(
    templates: &[String],
    names: &[String],
    multilabel: bool,
) -> Result<Vec<String>, PretrainError> {
    let mut out = Vec::new();
    for t in templates {
        for n in names.iter().map(String::as_str).chain(multilabel.then_some(NO_FINDING)) {
            out.push(fill_template(t, n).map_err(|e| PretrainError::Invalid(e.to_string()))?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_start_with_p1_and_fill_one_slot() {
        for spec in ["synth:derm?n=5", "synth:fundus", "synth:chest-site-b?n=3"] {
            let t = default_templates(spec).unwrap();
            assert_eq!(t[0], "a photo of a {}.", "{spec}");
            for c in all_captions(&t, &["melanoma".into()], false).unwrap() {
                assert_eq!(c.matches("melanoma").count(), 1, "{c}");
            }
        }
        assert_eq!(default_templates("synth:fundus").unwrap()[..7], MVC_BENCH_TEMPLATES.map(String::from));
        assert!(default_templates("synth:shapes").is_none());
        assert!(default_templates("data/x.csv").is_none());
        assert_eq!(
            all_captions(&[P1.into()], &["a".into()], true).unwrap(),
            ["a photo of a a.", "a photo of a no finding."]
        );
    }
}
