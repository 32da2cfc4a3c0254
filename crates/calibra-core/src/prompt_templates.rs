//! Prompt templates by name: the one list of the MVC-Bench family, which recipe validation
//! (calibra-run), the CLIP models (calibra-models) and the executors (calibra-exec) all read.

/// The seven prompt templates of MVC-Bench's template-stability study, P1…P7 in the order its
/// source lists them (`ashshaksharifdeen/MVC-Bench`, `prompt_variation_across_tmplate.py`: the context
/// phrases, written for diabetic-retinopathy grading; our template is `phrase + " {}."`, CoOp's
/// `ctx_init + " " + classname + "."`). P1 is CLIP's/CoOp's default `"a photo of a {}."`.
///
/// The spec (calibration-metrics-transfer.md §E) does not list the family; this is the source it was
/// taken from. Domain words (retina, fundus, DR) are MVC-Bench's; pass other templates for other tasks.
pub const MVC_BENCH_TEMPLATES: [&str; 7] = [
    "a photo of a {}.",
    "a photo of a retina with {}.",
    "a color fundus photograph showing diabetic retinopathy severity level as {}.",
    "Classify diabetic retinopathy severity from this fundus photo of a {}.",
    "You are classifying diabetic retinopathy on a fundus photo of a {}.",
    "This pic illustrates diab retinopthy severty of a {}.",
    "The DR level is {}.",
];

/// The text of MVC-Bench template `id` (`P1`…`P7`, [`MVC_BENCH_TEMPLATES`] in order), if it is one.
pub fn mvc_bench_template(id: &str) -> Option<&'static str> {
    let n: usize = id.strip_prefix('P')?.parse().ok()?;
    n.checked_sub(1).and_then(|i| MVC_BENCH_TEMPLATES.get(i)).copied()
}
