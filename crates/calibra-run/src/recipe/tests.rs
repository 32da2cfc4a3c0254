use super::*;
use std::collections::BTreeSet;

const NO_PATHS: ValidationOptions = ValidationOptions { check_paths: false };

/// A small valid recipe; tests edit one line of it.
pub(crate) const BASE: &str = r#"name = "t"
seeds = [0, 1]
label_fractions = [0.1, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
source = "hf:org/alpha"

[[encoders]]
name = "beta"
source = "checkpoints/beta"

[[datasets]]
spec = "synth:derm?n=40"
shift = [{ name = "derm-b", spec = "synth:fundus?n=40" }]

[perturbations]
names = ["jpeg", "contrast"]
severities = [1, 3]

[regimes.frozen]
probes = ["logistic", "knn"]

[regimes.lora]
r = 4
alpha = 8.0
dropout = 0.0
lr = 1e-4
epochs = 2
targets = ["query", "value"]
encoders = ["beta"]
label_fractions = [1.0]

[[losses]]
name = "mcm"
args = { alpha = 0.5, beta = 1.0 }
"#;

fn parse(text: &str) -> Result<Recipe, RunError> {
    Recipe::parse(text, "r.toml", NO_PATHS)
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn the_base_recipe_is_valid_and_names_default() {
    let r = parse(BASE).unwrap();
    assert_eq!(r.encoders[0].display_name(), "org/alpha");
    assert_eq!(r.encoders[1].display_name(), "beta");
    assert_eq!(r.datasets[0].display_name(), "derm");
    assert_eq!(r.adapted_regimes(), vec![Regime::Lora]);
}

#[test]
fn an_unknown_key_is_rejected_with_its_line() {
    let text = BASE.replace("r = 4\n", "r = 4\nrank = 4\n");
    let e = err(&text);
    let line = text.lines().position(|l| l == "rank = 4").unwrap() + 1;
    assert!(e.contains(&format!("r.toml:{line}")) && e.contains("rank"), "{e}");
}

#[test]
fn a_wrong_type_is_rejected_with_its_line() {
    let e = err(&BASE.replace("seeds = [0, 1]", "seeds = [\"zero\"]"));
    assert!(e.starts_with("r.toml:2: key `seeds[0]`"), "{e}");
}

#[test]
fn validation_errors_quote_the_key_and_line() {
    for (from, to, key, needle) in [
        (
            "label_fractions = [0.1, 1.0]",
            "label_fractions = [0.1, 1.5]",
            "label_fractions[1]",
            "outside (0, 1]",
        ),
        ("label_fractions = [0.1, 1.0]", "label_fractions = []", "label_fractions", "empty"),
        ("severities = [1, 3]", "severities = [1, 6]", "perturbations.severities[1]", "outside 1..=3"),
        // Issue 20 defect 7: 4 and 5 passed validation although calibra-data implements only 1..=3.
        ("severities = [1, 3]", "severities = [1, 4]", "perturbations.severities[1]", "outside 1..=3"),
        (
            "names = [\"jpeg\", \"contrast\"]",
            "names = [\"jpeg\", \"blurr\"]",
            "perturbations.names[1]",
            "blurr",
        ),
        (
            "calibrators = [\"none\", \"temperature\"]",
            "calibrators = [\"none\", \"platypus\"]",
            "calibrators[1]",
            "platypus",
        ),
        (
            "probes = [\"logistic\", \"knn\"]",
            "probes = [\"logistic\", \"svm\"]",
            "regimes.frozen.probes[1]",
            "svm",
        ),
        (
            "args = { alpha = 0.5, beta = 1.0 }",
            "args = { alpha = 0.5 }",
            "losses[0].args",
            "needs the argument `beta`",
        ),
        (
            "args = { alpha = 0.5, beta = 1.0 }",
            "args = { alpha = 0.5, beta = 1.0, gamma = 2.0 }",
            "losses[0].args.gamma",
            "no argument",
        ),
        ("encoders = [\"beta\"]", "encoders = [\"gamma\"]", "regimes.lora.encoders[0]", "not an encoder"),
        ("dropout = 0.0", "dropout = 1.0", "regimes.lora.dropout", "dropout"),
        ("spec = \"synth:derm?n=40\"", "spec = \"synth:derm?m=40\"", "datasets[0].spec", "unknown option"),
        // Issue 20 defect 8: the option values are parsed up front, not when the dataset is loaded.
        ("spec = \"synth:derm?n=40\"", "spec = \"synth:derm?n=abc\"", "datasets[0].spec", "n=abc"),
        (
            "spec = \"synth:fundus?n=40\"",
            "spec = \"synth:fundus?size=3\"",
            "datasets[0].shift[0].spec",
            "at least 28",
        ),
        (
            "spec = \"synth:derm?n=40\"",
            "spec = \"synth:skin\"",
            "datasets[0].spec",
            "unknown synthetic suite",
        ),
    ] {
        let text = BASE.replace(from, to);
        assert_ne!(text, BASE, "{from}");
        let line = text.lines().position(|l| l.contains(to)).unwrap() + 1;
        let e = err(&text);
        assert!(e.contains(&format!("r.toml:{line}: key `{key}`")) && e.contains(needle), "{to}: {e}");
    }
}

#[test]
fn several_problems_are_reported_together() {
    let text = BASE.replace("seeds = [0, 1]", "seeds = [0, 0]").replace("epochs = 2", "epochs = 0");
    let e = err(&text);
    assert!(e.starts_with("2 problem(s)"), "{e}");
    assert!(e.contains("key `seeds[1]`") && e.contains("key `regimes.lora.epochs`"), "{e}");
}

#[test]
fn duplicate_names_and_loss_labels_are_rejected() {
    let e = err(&BASE.replace("name = \"beta\"", "name = \"org/alpha\""));
    assert!(e.contains("encoders[1].name") && e.contains("also used by encoders[0]"), "{e}");
    let text = format!("{BASE}\n[[losses]]\nname = \"ce\"\nlabel = \"mcm\"\n");
    let e = err(&text);
    assert!(e.contains("losses[1]") && e.contains("loss label `mcm`"), "{e}");
}

#[test]
fn adapted_regimes_need_a_loss_and_losses_an_adapted_regime() {
    let text = BASE.replace("[[losses]]\nname = \"mcm\"\nargs = { alpha = 0.5, beta = 1.0 }\n", "");
    let e = err(&text);
    assert!(e.contains("key `regimes.lora`") && e.contains("no [[losses]] entry"), "{e}");
    let text = format!("{BASE}regimes = [\"coop\"]\n");
    let e = err(&text);
    assert!(e.contains("losses[0].regimes[0]") && e.contains("not an adapted regime"), "{e}");
}

#[test]
fn missing_local_paths_are_errors_unless_unchecked() {
    let e = Recipe::parse(BASE, "r.toml", ValidationOptions::default()).unwrap_err().to_string();
    assert!(e.contains("key `encoders[1].source`") && e.contains("does not exist"), "{e}");
    // An hf: id a fit reads must be in the local cache (issue 20); synthetic suites are never
    // checked on disk.
    assert!(e.contains("encoders[0].source") && e.contains("not in the local Hugging Face cache"), "{e}");
    assert!(!e.contains("datasets"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    for name in ["alpha", "beta"] {
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        std::fs::write(dir.path().join(name).join("config.json"), r#"{"model_type": "vit"}"#).unwrap();
    }
    let text = BASE
        .replace("checkpoints/beta", &dir.path().join("beta").display().to_string())
        .replace("hf:org/alpha", &dir.path().join("alpha").display().to_string());
    Recipe::parse(&text, "r.toml", ValidationOptions::default()).unwrap();
    let text = BASE.replace("synth:derm?n=40", "isic2019:/definitely/not/here");
    let e = Recipe::parse(&text, "r.toml", ValidationOptions::default()).unwrap_err().to_string();
    assert!(e.contains("datasets[0].spec") && e.contains("/definitely/not/here"), "{e}");
}

#[test]
fn no_regime_is_an_error() {
    let start = BASE.find("[regimes.frozen]").unwrap();
    let end = BASE.find("[[losses]]").unwrap();
    let text = format!("{}[regimes]\n", &BASE[..start])
        + &BASE[end..].replace("[[losses]]\nname = \"mcm\"\nargs = { alpha = 0.5, beta = 1.0 }\n", "");
    let e = err(&text);
    assert!(e.contains("at least one regime"), "{e}");
}

#[test]
fn single_label_calibrators_on_a_multilabel_dataset_are_refused_up_front() {
    // The top-level list applies to the multilabel chest task: refused at that list's key.
    let text = BASE
        .replace(
            "calibrators = [\"none\", \"temperature\"]",
            "calibrators = [\"none\", \"temperature\", \"dirichlet\"]",
        )
        .replace("spec = \"synth:derm?n=40\"", "spec = \"synth:chest?n=40\"");
    let line = text.lines().position(|l| l.contains("dirichlet")).unwrap() + 1;
    let e = err(&text);
    assert!(e.contains(&format!("r.toml:{line}: key `calibrators[2]`")), "{e}");
    assert!(e.contains("dataset `chest`") && e.contains("calibrators = [\"none\", \"temperature\"]"), "{e}");

    // The dataset's own list overrides the top-level one, and the grid uses it.
    let scoped = text.replace(
        "spec = \"synth:chest?n=40\"",
        "spec = \"synth:chest?n=40\"\ncalibrators = [\"none\", \"isotonic\"]",
    );
    let r = parse(&scoped).unwrap();
    assert_eq!(r.calibrators_for(&r.datasets[0]), ["none", "isotonic"]);
    let fits = crate::grid::expand(&r);
    assert!(
        fits.iter().all(|f| f.slots.iter().all(|s| s.calibrator == "none" || s.calibrator == "isotonic"))
    );

    // A dataset list naming a single-label calibrator is refused at its own key.
    let bad = text.replace(
        "spec = \"synth:chest?n=40\"",
        "spec = \"synth:chest?n=40\"\ncalibrators = [\"none\", \"vector\"]",
    );
    assert!(err(&bad).contains("key `datasets[0].calibrators[1]`"), "{}", err(&bad));

    // A single-label dataset takes every calibrator.
    let derm = BASE.replace(
        "calibrators = [\"none\", \"temperature\"]",
        "calibrators = [\"none\", \"temperature\", \"vector\", \"dirichlet\"]",
    );
    parse(&derm).unwrap();
}

/// BASE with a zero-shot regime whose `templates` line is `templates`.
fn with_zero_shot(templates: &str) -> String {
    format!("{BASE}\n[regimes.zero-shot]\ntemplates = {templates}\n")
}

#[test]
fn zero_shot_templates_resolve_to_ids_in_recipe_order() {
    let r = parse(&with_zero_shot(r#"["P2", "a dermoscopy image of {}.", "P1", "{} on skin"]"#)).unwrap();
    let t = r.regimes.zero_shot.as_ref().unwrap().resolved_templates();
    let ids: Vec<&str> = t.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["P2", "C1", "P1", "C2"]);
    assert_eq!(t[0].text, None);
    assert_eq!(t[1].text.as_deref(), Some("a dermoscopy image of {}."));
    assert_eq!(t[3].text.as_deref(), Some("{} on skin"));

    let r = parse(&with_zero_shot(r#"["mvc-bench", "x-ray of {}"]"#)).unwrap();
    let t = r.regimes.zero_shot.as_ref().unwrap().resolved_templates();
    let ids: Vec<String> = t.iter().map(|t| t.id.clone()).collect();
    let mut expected: Vec<String> = (1..=MVC_BENCH_TEMPLATE_COUNT).map(|n| format!("P{n}")).collect();
    expected.push("C1".into());
    assert_eq!(ids, expected);
}

#[test]
fn zero_shot_template_errors_name_the_index_and_line() {
    for (templates, key, needle) in [
        (r#"["P1", "P8"]"#, "regimes.zero-shot.templates[1]", "not an MVC-Bench template id"),
        (r#"["P0"]"#, "regimes.zero-shot.templates[0]", "not an MVC-Bench template id"),
        (r#"["P1", "a photo"]"#, "regimes.zero-shot.templates[1]", "has no `{}`"),
        (r#"["{} and {}"]"#, "regimes.zero-shot.templates[0]", "has 2 `{}`"),
        (r#"["P3", "P3"]"#, "regimes.zero-shot.templates[1]", "template P3 is already listed at index 0"),
        (r#"["mvc-bench", "P4"]"#, "regimes.zero-shot.templates[1]", "through \"mvc-bench\""),
        (r#"["a {}", "a {}"]"#, "regimes.zero-shot.templates[1]", "already listed at index 0"),
        ("[]", "regimes.zero-shot.templates", "the list is empty"),
    ] {
        let text = with_zero_shot(templates);
        let line = text.lines().position(|l| l.starts_with("templates = ")).unwrap() + 1;
        let e = err(&text);
        assert!(e.contains(&format!("r.toml:{line}: key `{key}`")) && e.contains(needle), "{templates}: {e}");
    }
}

#[test]
fn zero_shot_refuses_multilabel_datasets_unless_scoped_out() {
    let text = BASE.replace(
        "[perturbations]",
        "[[datasets]]\nname = \"cx\"\nspec = \"synth:chest?n=40\"\ncalibrators = [\"none\"]\n\n[perturbations]",
    );
    let e = err(&with_zero_shot(r#"["P1"]"#).replace(BASE, &text));
    assert!(e.contains("key `regimes.zero-shot`") && e.contains("`cx`") && e.contains("multilabel"), "{e}");
    assert!(e.contains("datasets = [\"derm\"]"), "the error suggests the single-label scope: {e}");

    let scoped = format!("{text}\n[regimes.zero-shot]\ntemplates = [\"P1\"]\ndatasets = [\"derm\"]\n");
    let r = parse(&scoped).unwrap();
    let zs: Vec<_> =
        crate::grid::expand(&r).into_iter().filter(|f| f.config.regime == Regime::ZeroShot).collect();
    // 2 encoders × 1 dataset × 1 template × 2 seeds.
    assert_eq!(zs.len(), 4);
    assert!(zs.iter().all(|f| f.config.dataset.name == "derm"));

    let listed =
        format!("{text}\n[regimes.zero-shot]\ntemplates = [\"P1\"]\ndatasets = [\"derm\", \"cx\"]\n");
    let e = err(&listed);
    assert!(e.contains("key `regimes.zero-shot.datasets[1]`") && e.contains("multilabel"), "{e}");
    let unknown = format!("{text}\n[regimes.zero-shot]\ntemplates = [\"P1\"]\ndatasets = [\"skin\"]\n");
    let e = err(&unknown);
    assert!(e.contains("key `regimes.zero-shot.datasets[0]`") && e.contains("not a dataset"), "{e}");
}

#[test]
fn zero_shot_has_one_fit_per_template_and_seed_with_its_own_key_and_probe() {
    let r = parse(&with_zero_shot(r#"["P1", "P2", "a dermoscopy image of {}."]"#)).unwrap();
    let fits = crate::grid::expand(&r);
    let zs: Vec<_> = fits.iter().filter(|f| f.config.regime == Regime::ZeroShot).collect();
    // 2 encoders × 1 dataset × 3 templates × 2 seeds.
    assert_eq!(zs.len(), 12);
    let probes: BTreeSet<&str> = zs.iter().map(|f| f.config.probe.as_str()).collect();
    assert_eq!(probes, ["zero-shot:C1", "zero-shot:P1", "zero-shot:P2"].into_iter().collect());
    let keys: BTreeSet<_> = zs.iter().map(|f| f.key.clone()).collect();
    assert_eq!(keys.len(), zs.len(), "every template × seed has its own fit key");
    assert!(zs.iter().all(|f| f.config.label_fraction == 1.0));
    // Slots: (clean + 2 perturbations × 2 severities + 1 shift) × 2 calibrators, as every fit.
    assert!(zs.iter().all(|f| f.slots.len() == 12));

    let summary = crate::cost::summarize(&r, &fits);
    let z = &summary.per_regime["zero-shot"];
    assert_eq!((z.fits, z.records, z.fit_passes), (12, 144, 0.0));
    // The zero-shot image features are the frozen regime's passes (same encoder, dataset and
    // conditions): zero-shot adds no pass.
    let without = crate::grid::expand(&parse(BASE).unwrap());
    let base_summary = crate::cost::summarize(&parse(BASE).unwrap(), &without);
    assert_eq!(summary.feature_passes, base_summary.feature_passes);
    assert_eq!(summary.feature_pass_cost, base_summary.feature_pass_cost);
}

#[test]
fn a_zero_shot_only_clean_pass_costs_calibration_plus_test() {
    // Exact by construction: the default split 0.7 / 0.15 / 0.15 gives c/e = 1, t/e = 0.7/0.15; with
    // zero-shot alone the clean pass covers calibration + test (2 passes), each other condition 1.
    let start = BASE.find("[regimes.frozen]").unwrap();
    let text = format!("{}[regimes.zero-shot]\ntemplates = [\"P1\"]\n", &BASE[..start]);
    let r = parse(&text).unwrap();
    let fits = crate::grid::expand(&r);
    let s = crate::cost::summarize(&r, &fits);
    // 2 encoders × (clean + 4 perturbed + 1 shift).
    assert_eq!(s.feature_passes, 12);
    assert!((s.feature_pass_cost - 2.0 * (2.0 + 5.0)).abs() < 1e-12, "{}", s.feature_pass_cost);
    assert_eq!(s.total_passes, s.feature_pass_cost);
}

#[test]
fn coop_on_a_multilabel_dataset_is_refused_unless_scoped_out() {
    let with_chest = BASE.replace(
        "[[datasets]]\nspec = \"synth:derm?n=40\"",
        "[[datasets]]\nspec = \"synth:derm?n=40\"\n\n[[datasets]]\nspec = \"synth:chest?n=40\"\ncalibrators = [\"none\"]",
    );
    assert_ne!(with_chest, BASE);
    let coop = "\n[regimes.coop]\nn_ctx = 4\nepochs = 1\nlr = 2e-3\nencoders = [\"beta\"]\n";
    let e = err(&(with_chest.clone() + coop));
    assert!(e.contains("key `regimes.coop`") && e.contains("CoOp needs a single-label dataset"), "{e}");
    assert!(e.contains("datasets = [\"derm\"]"), "{e}");

    let scoped = with_chest + coop + "datasets = [\"derm\"]\n";
    let r = parse(&scoped).unwrap();
    let coop_fits: Vec<_> =
        crate::grid::expand(&r).into_iter().filter(|f| f.config.regime == Regime::Coop).collect();
    assert!(!coop_fits.is_empty());
    assert!(coop_fits.iter().all(|f| f.config.dataset.name == "derm"));
}

/// Issue 20: a missing `[[encoders]]` table was reported at `:1 key 'name'`.
#[test]
fn a_missing_top_level_table_is_not_blamed_on_the_first_key() {
    let text: String = BASE
        .split("[[encoders]]")
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part.to_string()
            } else {
                part.split_once("\n\n").map_or(String::new(), |(_, rest)| rest.to_string())
            }
        })
        .collect();
    assert!(!text.contains("[[encoders]]"), "{text}");
    let err = Recipe::parse(&text, "r.toml", NO_PATHS).unwrap_err().to_string();
    assert!(err.starts_with("r.toml: missing field `encoders`"), "{err}");
    assert!(
        err.contains("[[encoders]]") && !err.contains("key `name`") && !err.contains("r.toml:1"),
        "{err}"
    );
}

/// Issue 20: an encoder path that is a file was reported as "config.json not found".
#[test]
fn an_encoder_path_that_is_a_file_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.safetensors");
    std::fs::write(&file, "x").unwrap();
    let text = BASE.replace("checkpoints/beta", &file.display().to_string());
    let err =
        Recipe::parse(&text, "r.toml", ValidationOptions { check_paths: true }).unwrap_err().to_string();
    assert!(err.contains("encoders[1].source") && err.contains("is a file"), "{err}");
}

/// BASE with an estimate regime whose body is `body`.
fn with_estimate(body: &str) -> String {
    format!("{BASE}\n[regimes.estimate]\n{body}")
}

#[test]
fn estimate_defaults_to_every_estimator_at_four_depths() {
    let r = parse(&with_estimate("")).unwrap();
    let e = r.regimes.estimate.as_ref().unwrap();
    assert_eq!(e.estimators, names::ESTIMATORS);
    assert_eq!(e.layers, [0.25, 0.5, 0.75, 1.0]);
}

#[test]
fn estimate_errors_name_the_key_and_line() {
    for (body, key, needle) in [
        (
            "estimators = [\"logme\", \"leep\"]\n",
            "regimes.estimate.estimators[1]",
            "unknown estimator `leep`",
        ),
        ("estimators = []\n", "regimes.estimate.estimators", "the list is empty"),
        ("layers = [0.5, 1.5]\n", "regimes.estimate.layers[1]", "outside (0, 1]"),
        ("encoders = [\"gamma\"]\n", "regimes.estimate.encoders[0]", "gamma"),
    ] {
        let text = with_estimate(body);
        let line = text.lines().position(|l| l == body.trim_end()).unwrap() + 1;
        let e = err(&text);
        assert!(e.contains(&format!("r.toml:{line}: key `{key}`")) && e.contains(needle), "{body}: {e}");
    }
}

#[test]
fn estimate_has_one_fit_per_encoder_dataset_and_layer_with_one_clean_slot() {
    let r = parse(&with_estimate("layers = [0.5, 1.0]\nencoders = [\"beta\"]\n")).unwrap();
    let fits = crate::grid::expand(&r);
    let est: Vec<_> = fits.iter().filter(|f| f.config.regime == Regime::Estimate).collect();
    // 1 encoder × 1 dataset × 2 layers, at the first seed only.
    assert_eq!(est.len(), 2);
    let probes: Vec<&str> = est.iter().map(|f| f.config.probe.as_str()).collect();
    assert_eq!(probes, ["estimators@0.5", "estimators"]);
    for f in &est {
        assert_eq!((f.config.seed, f.config.label_fraction), (r.seeds[0], 1.0));
        assert_eq!(
            f.slots,
            [crate::grid::Slot { condition: calibra_crs::Condition::Clean, calibrator: "none".into() }]
        );
        assert!(f.uses_frozen_features());
    }
    let summary = crate::cost::summarize(&r, &fits);
    let e = &summary.per_regime["estimate"];
    assert_eq!((e.fits, e.records, e.fit_passes), (2, 2, 0.0));
    // The estimators read the frozen regime's clean train pass: no feature pass is added.
    let base = parse(BASE).unwrap();
    assert_eq!(
        summary.feature_passes,
        crate::cost::summarize(&base, &crate::grid::expand(&base)).feature_passes
    );
    // An estimate-only recipe is a valid study.
    let alone = BASE.split("[regimes.frozen]").next().unwrap().to_string()
        + "[regimes.estimate]\nestimators = [\"logme\"]\n";
    let r = parse(&alone).unwrap();
    assert!(crate::grid::expand(&r).iter().all(|f| f.config.regime == Regime::Estimate));
}

#[test]
fn a_recipe_round_trips_through_its_toml_with_the_same_fits() {
    let shipped = ["quickstart", "crs-bench", "mvc-bench"].map(|n| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../recipes/{n}.toml"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    });
    for text in std::iter::once(BASE.to_string()).chain(shipped) {
        let recipe = parse(&text).unwrap();
        let written = recipe.to_toml().unwrap();
        let again = parse(&written).unwrap_or_else(|e| panic!("{e}\n{written}"));
        assert_eq!(again, recipe, "{written}");
        let keys = |r: &Recipe| crate::expand(r).iter().map(|f| f.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&again), keys(&recipe));
    }
}
