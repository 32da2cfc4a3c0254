//! Prompt texts of the CLIP regimes: the MVC-Bench templates by id (calibra-core's list) and the
//! class names prompts use.

pub use calibra_core::mvc_bench_template;

/// Class names for the prompts from a dataset's label names: `_` reads as a space.
pub fn prompt_classnames(label_names: &[String]) -> Vec<String> {
    label_names.iter().map(|c| c.replace('_', " ")).collect()
}

#[cfg(test)]
mod tests {
    use calibra_core::MVC_BENCH_TEMPLATES;
    use calibra_run::recipe::MVC_BENCH_TEMPLATE_COUNT;

    use super::*;

    #[test]
    fn the_recipe_knows_as_many_mvc_bench_templates_as_calibra_models_ships() {
        assert_eq!(MVC_BENCH_TEMPLATE_COUNT, MVC_BENCH_TEMPLATES.len());
        for (i, text) in MVC_BENCH_TEMPLATES.iter().enumerate() {
            assert_eq!(mvc_bench_template(&format!("P{}", i + 1)), Some(*text));
        }
        for id in ["P0", "P8", "P", "p1", "C1", "P1x"] {
            assert_eq!(mvc_bench_template(id), None, "{id}");
        }
    }
}
