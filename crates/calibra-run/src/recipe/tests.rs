use super::*;

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
        ("severities = [1, 3]", "severities = [1, 6]", "perturbations.severities[1]", "outside 1..=5"),
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
    // hf: ids and synthetic suites are never checked on disk.
    assert!(!e.contains("encoders[0]") && !e.contains("datasets"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let text = BASE.replace("checkpoints/beta", &dir.path().display().to_string());
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
