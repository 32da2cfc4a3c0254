//! Grid expansion: sizes, slot order, fit keys.
mod support;

use calibra_crs::{Condition, Regime};
use calibra_run::{FitKey, Recipe, ValidationOptions, expand, feature_passes, summarize};
use support::{RECIPE, recipe};

#[test]
fn the_grid_has_the_documented_size() {
    let fits = expand(&recipe());
    // frozen: 2 encoders × 2 probes × 2 fractions × 2 seeds; lora: 1 encoder × 1 loss × 1 fraction × 2 seeds.
    assert_eq!(fits.iter().filter(|f| f.config.regime == Regime::Frozen).count(), 16);
    assert_eq!(fits.iter().filter(|f| f.config.regime == Regime::Lora).count(), 2);
    // (clean + 2 perturbations × 2 severities + 1 shift) × 2 calibrators.
    assert!(fits.iter().all(|f| f.slots.len() == 12));
    let first = &fits[0];
    assert_eq!(first.slots[0].condition, Condition::Clean);
    assert_eq!(first.slots[1].calibrator, "temperature");
    assert_eq!(
        first.slots[2].condition,
        Condition::Perturbation { perturbation: "jpeg".into(), severity: 1 }
    );
    assert_eq!(first.slots[11].condition, Condition::Shift { target: "derm-b".into() });
    // One feature pass per (encoder, dataset, condition), shared by the 8 frozen fits of each encoder.
    assert_eq!(feature_passes(&fits).len(), 2 * 6);
    let s = summarize(&recipe(), &fits);
    assert_eq!((s.fits, s.records, s.feature_passes), (18, 216, 12));
    assert_eq!(s.per_regime["frozen"].fits, 16);
    assert_eq!(s.per_regime["lora"].records, 24);
    assert!(s.total_passes > 0.0 && s.estimated_hours.is_none());
}

#[test]
fn fit_keys_are_distinct_and_ignore_recipe_formatting() {
    let fits = expand(&recipe());
    let keys: std::collections::BTreeSet<&FitKey> = fits.iter().map(|f| &f.key).collect();
    assert_eq!(keys.len(), fits.len());
    // Reordering keys in the recipe and adding comments changes nothing.
    let reordered = RECIPE.replace("r = 4\nalpha = 8.0\n", "alpha = 8.0 # scale\nr = 4\n").replace(
        "seeds = [0, 1]\nlabel_fractions = [0.1, 1.0]\n",
        "label_fractions = [0.1, 1.0]\nseeds = [0, 1]\n",
    );
    assert_ne!(reordered, RECIPE);
    let again =
        expand(&Recipe::parse(&reordered, "x.toml", ValidationOptions { check_paths: false }).unwrap());
    assert_eq!(
        fits.iter().map(|f| &f.key).collect::<Vec<_>>(),
        again.iter().map(|f| &f.key).collect::<Vec<_>>()
    );
}

#[test]
fn a_hyper_parameter_changes_only_its_fits_keys() {
    let fits = expand(&recipe());
    let changed = expand(
        &Recipe::parse(
            &RECIPE.replace("lr = 1e-4", "lr = 2e-4"),
            "x.toml",
            ValidationOptions { check_paths: false },
        )
        .unwrap(),
    );
    for (a, b) in fits.iter().zip(&changed) {
        assert_eq!(a.key == b.key, a.config.regime == Regime::Frozen, "{}", a.describe());
    }
    // Adding a perturbation adds slots but keeps every key (conditions are slots, not key fields).
    let more = expand(
        &Recipe::parse(
            &RECIPE.replace(
                "names = [\"jpeg\", \"contrast\"]",
                "names = [\"jpeg\", \"contrast\", \"fov-crop\"]",
            ),
            "x.toml",
            ValidationOptions { check_paths: false },
        )
        .unwrap(),
    );
    for (a, b) in fits.iter().zip(&more) {
        assert_eq!(a.key, b.key);
        assert_eq!(b.slots.len(), a.slots.len() + 4);
    }
}

#[test]
fn zero_shot_fits_use_the_full_fraction_and_layers_label_the_probe() {
    let text = RECIPE
        .replace("probes = [\"logistic\", \"knn\"]", "probes = [\"logistic\"]\nlayers = [0.5, 1.0]")
        + "\n[regimes.zero-shot]\ntemplates = [\"a photo of {}\"]\nencoders = [\"beta\"]\n";
    let fits = expand(&Recipe::parse(&text, "x.toml", ValidationOptions { check_paths: false }).unwrap());
    let probes: std::collections::BTreeSet<&str> =
        fits.iter().filter(|f| f.config.regime == Regime::Frozen).map(|f| f.config.probe.as_str()).collect();
    assert_eq!(probes, ["logistic", "logistic@0.5"].into_iter().collect());
    let zs: Vec<_> = fits.iter().filter(|f| f.config.regime == Regime::ZeroShot).collect();
    assert_eq!(zs.len(), 2); // one encoder × 2 seeds
    assert!(zs.iter().all(|f| f.config.label_fraction == 1.0 && f.config.probe == "zero-shot:C1"));
}

#[test]
fn head_init_and_early_stopping_enter_the_key_only_when_not_historical() {
    let parse = |text: &str| {
        expand(&Recipe::parse(text, "x.toml", ValidationOptions { check_paths: false }).unwrap())
    };
    let lora_keys = |fits: &[calibra_run::FitSpec]| -> Vec<FitKey> {
        fits.iter().filter(|f| f.config.regime == Regime::Lora).map(|f| f.key.clone()).collect()
    };
    let base = expand(&recipe());
    // The fit configuration of a recipe that does not set them serialises exactly as before they
    // existed (no `head_init` / `early_stopping` members), so its keys and stored fits are kept.
    let lora = base.iter().find(|f| f.config.regime == Regime::Lora).unwrap();
    let json = serde_json::to_value(&lora.config.method).unwrap();
    let members: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(members, ["alpha", "dropout", "epochs", "kind", "loss", "lr", "r", "targets"]);
    let random = parse(&RECIPE.replace("r = 4\n", "r = 4\nhead_init = \"random\"\n"));
    assert_eq!(lora_keys(&base), lora_keys(&random), "random is the historical head");
    let probe = parse(&RECIPE.replace("r = 4\n", "r = 4\nhead_init = \"probe\"\n"));
    let stopping = parse(&RECIPE.replace("r = 4\n", "r = 4\nearly_stopping = 2\n"));
    for other in [&probe, &stopping] {
        assert!(lora_keys(&base).iter().zip(lora_keys(other)).all(|(a, b)| *a != b));
        let frozen = |f: &[calibra_run::FitSpec]| -> Vec<FitKey> {
            f.iter().filter(|f| f.config.regime == Regime::Frozen).map(|f| f.key.clone()).collect()
        };
        assert_eq!(frozen(&base), frozen(other));
    }
    let bad = RECIPE.replace("r = 4\n", "r = 4\nhead_init = \"linear\"\nearly_stopping = 0\n");
    let err =
        Recipe::parse(&bad, "x.toml", ValidationOptions { check_paths: false }).unwrap_err().to_string();
    assert!(err.contains("head_init") && err.contains("early_stopping"), "{err}");
}

#[test]
fn batch_size_accumulate_and_augment_enter_the_key_only_when_not_the_default() {
    let parse = |text: &str| {
        expand(&Recipe::parse(text, "x.toml", ValidationOptions { check_paths: false }).unwrap())
    };
    let lora_keys = |fits: &[calibra_run::FitSpec]| -> Vec<FitKey> {
        fits.iter().filter(|f| f.config.regime == Regime::Lora).map(|f| f.key.clone()).collect()
    };
    let base = expand(&recipe());
    let defaults = parse(&RECIPE.replace("r = 4\n", "r = 4\nbatch_size = 32\naccumulate = 1\n"));
    assert_eq!(lora_keys(&base), lora_keys(&defaults), "the defaults keep the keys of before");
    let accumulated = parse(&RECIPE.replace("r = 4\n", "r = 4\nbatch_size = 16\naccumulate = 2\n"));
    assert!(lora_keys(&base).iter().zip(lora_keys(&accumulated)).all(|(a, b)| *a != b));
    let lora = accumulated.iter().find(|f| f.config.regime == Regime::Lora).unwrap();
    let json = serde_json::to_value(&lora.config.method).unwrap();
    assert_eq!((json["batch_size"].as_u64(), json["accumulate"].as_u64()), (Some(16), Some(2)));
    let none = parse(&RECIPE.replace("r = 4\n", "r = 4\naugment = \"none\"\n"));
    assert_eq!(lora_keys(&base), lora_keys(&none), "no augmentation keeps the keys of before");
    let augmented = parse(&RECIPE.replace("r = 4\n", "r = 4\naugment = \"crop-flip\"\n"));
    assert!(lora_keys(&base).iter().zip(lora_keys(&augmented)).all(|(a, b)| *a != b));
    let bad = RECIPE.replace("r = 4\n", "r = 4\nbatch_size = 0\naccumulate = 0\naugment = \"mixup\"\n");
    let err =
        Recipe::parse(&bad, "x.toml", ValidationOptions { check_paths: false }).unwrap_err().to_string();
    assert!(err.contains("batch_size must be >= 1") && err.contains("accumulate must be >= 1"), "{err}");
    assert!(err.contains("unknown augment `mixup`; expected one of none, crop-flip"), "{err}");
}
