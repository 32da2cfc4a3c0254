//! What a recipe's `[evaluator]` section asks of the evaluation: the one typed conversion
//! `EvaluatorSettings → EvalOptions`, the options of a run store's saved recipe (`calibra report`),
//! and the `calibra eval` command line those options mean (printed so that a user can rerun or vary it).

use crate::eval_options::{EvalOptions, regime_named, robustness_name, robustness_variant};
use calibra_crs::{AxisWeights, ComponentWeights};
use calibra_run::recipe::EvaluatorSettings;
use calibra_run::{Recipe, RunError, ValidationOptions};
use std::path::{Path, PathBuf};

/// A run store whose evaluator settings cannot be read, or settings that are not valid options.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{}: not a run store (no runs.jsonl)", .0.display())]
    NotAStore(PathBuf),
    #[error("{}: the run store's saved recipe", recipe.display())]
    Recipe {
        recipe: PathBuf,
        #[source]
        source: RunError,
    },
    /// A value of `[evaluator]` that the evaluator does not accept (`key` names it).
    #[error("[evaluator] {key}: {message}")]
    Invalid { key: &'static str, message: String },
    /// An invalid value in the run store's saved recipe.
    #[error("{}", recipe.display())]
    InRecipe {
        recipe: PathBuf,
        #[source]
        source: Box<SettingsError>,
    },
}

impl TryFrom<&EvaluatorSettings> for EvalOptions {
    type Error = SettingsError;

    /// The evaluation a recipe's `[evaluator]` section asks for; every option it does not set keeps
    /// `calibra eval`'s default.
    fn try_from(s: &EvaluatorSettings) -> Result<Self, SettingsError> {
        let invalid = |key, message: String| SettingsError::Invalid { key, message };
        let weights = s
            .weights
            .map(|[d, i, w]| ComponentWeights::new(d, i, w))
            .transpose()
            .map_err(|e| invalid("weights", e.to_string()))?;
        let axis_weights = s
            .axis_weights
            .map(AxisWeights::new)
            .transpose()
            .map_err(|e| invalid("axis_weights", e.to_string()))?;
        let robustness = robustness_variant(&s.robustness).ok_or_else(|| {
            invalid("robustness", format!("`{}` is not `with-shift` or `corruption-only`", s.robustness))
        })?;
        let regime = regime_named(&s.regime).ok_or_else(|| {
            invalid(
                "regime",
                format!("`{}` is not a regime; expected frozen, lora, coop, full or zero-shot", s.regime),
            )
        })?;
        Ok(EvalOptions {
            reference: s.reference.as_ref().map(PathBuf::from),
            bootstrap: s.bootstrap,
            seed: s.seed,
            weights,
            axis_weights,
            robustness,
            regime,
            ..EvalOptions::default()
        })
    }
}

/// The evaluation `calibra report` makes of the run store `run_dir`: its records (`runs.jsonl`) with
/// the `[evaluator]` settings of its saved recipe (`journal/recipe.toml`; the defaults when it is
/// absent, said through `log`), written to `run_dir/report` (replaced if present).
pub fn store_eval_options(run_dir: &Path, log: &mut dyn FnMut(&str)) -> Result<EvalOptions, SettingsError> {
    if !run_dir.join("runs.jsonl").is_file() {
        return Err(SettingsError::NotAStore(run_dir.to_path_buf()));
    }
    let recipe = run_dir.join("journal/recipe.toml");
    let options = if recipe.is_file() {
        // Paths were checked when the grid ran; the report needs only the evaluator settings.
        let settings = Recipe::load(&recipe, ValidationOptions { check_paths: false })
            .map_err(|source| SettingsError::Recipe { recipe: recipe.clone(), source })?
            .evaluator();
        EvalOptions::try_from(&settings)
            .map_err(|e| SettingsError::InRecipe { recipe: recipe.clone(), source: Box::new(e) })?
    } else {
        log(&format!("note: {} is absent; using the evaluator defaults", recipe.display()));
        EvalOptions::try_from(&EvaluatorSettings::default())?
    };
    Ok(EvalOptions {
        inputs: vec![run_dir.to_path_buf()],
        out: Some(run_dir.join("report")),
        force: true,
        ..options
    })
}

/// The `calibra eval` arguments (after `eval`) of the options a recipe and `calibra report` set: the
/// inputs, `--out`, `--force`, `--bootstrap`, `--seed`, `--reference`, `--weights`, `--axis-weights`,
/// `--robustness`, `--regime`, `--all-diagrams` and `--figures`. The other options are not shown.
pub fn eval_command_line(o: &EvalOptions) -> Vec<String> {
    let join = |w: &[f64]| w.iter().map(f64::to_string).collect::<Vec<_>>().join(",");
    let mut argv: Vec<String> = o.inputs.iter().map(|p| p.display().to_string()).collect();
    if let Some(out) = &o.out {
        argv.extend(["--out".into(), out.display().to_string()]);
    }
    if o.force {
        argv.push("--force".into());
    }
    argv.extend(["--bootstrap".into(), o.bootstrap.to_string(), "--seed".into(), o.seed.to_string()]);
    if let Some(reference) = &o.reference {
        argv.extend(["--reference".into(), reference.display().to_string()]);
    }
    if let Some(w) = o.weights {
        argv.extend(["--weights".into(), join(&[w.dominance, w.ideal, w.worst])]);
    }
    if let Some(w) = o.axis_weights {
        argv.extend(["--axis-weights".into(), join(w.as_slice())]);
    }
    argv.extend(["--robustness".into(), robustness_name(o.robustness).into()]);
    argv.extend(["--regime".into(), o.regime.name().into()]);
    if o.all_diagrams {
        argv.push("--all-diagrams".into());
    }
    if o.png {
        argv.extend(["--figures".into(), "svg,png".into()]);
    }
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_options_and_print_as_the_eval_command_line() {
        let settings = EvaluatorSettings {
            reference: Some("ref.json".into()),
            bootstrap: 50,
            seed: 7,
            weights: Some([0.5, 0.3, 0.2]),
            axis_weights: None,
            robustness: "corruption-only".into(),
            regime: "zero-shot".into(),
        };
        let options = EvalOptions {
            inputs: vec!["store".into()],
            out: Some("store/report".into()),
            force: true,
            ..EvalOptions::try_from(&settings).unwrap()
        };
        assert_eq!(
            eval_command_line(&options).join(" "),
            "store --out store/report --force --bootstrap 50 --seed 7 --reference ref.json --weights 0.5,0.3,0.2 \
             --robustness corruption-only --regime zero-shot"
        );
        let defaults = EvalOptions::try_from(&EvaluatorSettings::default()).unwrap();
        assert_eq!(defaults, EvalOptions::default());
    }

    #[test]
    fn invalid_settings_name_their_key() {
        let bad = EvaluatorSettings { regime: "nonsense".into(), ..EvaluatorSettings::default() };
        let e = EvalOptions::try_from(&bad).unwrap_err().to_string();
        assert!(e.starts_with("[evaluator] regime: `nonsense` is not a regime"), "{e}");
        let bad = EvaluatorSettings { weights: Some([0.5, 0.5, 0.5]), ..EvaluatorSettings::default() };
        assert!(EvalOptions::try_from(&bad).unwrap_err().to_string().starts_with("[evaluator] weights: "));
    }
}
