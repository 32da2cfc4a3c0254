//! `[regimes.coop] methods` (issue #25, item 1): each prompt-learning method is its own fit with its
//! own probe (`kgcoop+mcm`), a recipe without `methods` keeps the fit keys it had before the key
//! existed, and a bad method or hyper-parameter is named with its key and line.

use calibra_crs::Regime;
use calibra_run::shard::assign;
use calibra_run::{FitKey, FitSpec, Recipe, ValidationOptions, expand, summarize};

const RECIPE: &str = r#"seeds = [0, 1]
label_fractions = [0.5, 1.0]
calibrators = ["none"]

[[encoders]]
source = "hf:org/clip"

[[datasets]]
spec = "synth:derm?n=40"

[regimes.frozen]
probes = ["logistic"]

[regimes.coop]
n_ctx = 4
epochs = 2
lr = 2e-3

[[losses]]
name = "ce"

[[losses]]
name = "mcm"
args = { alpha = 0.5, beta = 1.0 }
"#;

fn parse(text: &str) -> Result<Recipe, calibra_run::RunError> {
    Recipe::parse(text, "r.toml", ValidationOptions { check_paths: false })
}

fn coop_fits(text: &str) -> Vec<FitSpec> {
    let recipe = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    expand(&recipe).into_iter().filter(|f| f.config.regime == Regime::Coop).collect()
}

fn keys(fits: &[FitSpec]) -> Vec<FitKey> {
    fits.iter().map(|f| f.key.clone()).collect()
}

/// RECIPE with `lines` added to `[regimes.coop]`.
fn with_coop(lines: &str) -> String {
    RECIPE.replace("lr = 2e-3\n", &format!("lr = 2e-3\n{lines}"))
}

/// The fit keys of RECIPE's first two CoOp fits (`ce`, fraction 0.5, seeds 0 and 1) as calibra-run
/// computed them before `methods` existed (main at 4383bd6, expanding this recipe).
const KEYS_BEFORE_METHODS: [&str; 2] = [
    "34ac8873f1607a9908e2489042d6e1346eb2957acecc0a72678138e60cf9575a",
    "f95211f8834a485f5da3dcb609f47845643c54b22844ec64c8048f9305b0532d",
];

#[test]
fn a_recipe_without_methods_keeps_its_keys_and_probes() {
    let fits = coop_fits(RECIPE);
    // 2 losses × 2 fractions × 2 seeds, probe = the loss label, as before.
    assert_eq!(fits.len(), 8);
    let probes: Vec<&str> = fits.iter().map(|f| f.config.probe.as_str()).collect();
    assert_eq!(probes, ["ce", "ce", "ce", "ce", "mcm", "mcm", "mcm", "mcm"]);
    // The method of a plain CoOp fit serialises exactly as before `methods` existed.
    let json = serde_json::to_value(&fits[0].config.method).unwrap();
    let members: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(members, ["class_position", "csc", "ctx_init", "epochs", "kind", "loss", "lr", "n_ctx"]);
    assert_eq!([fits[0].key.as_str(), fits[1].key.as_str()], KEYS_BEFORE_METHODS);
    // `methods = ["coop"]` is the default spelled out: same fits, same keys.
    assert_eq!(keys(&coop_fits(&with_coop("methods = [\"coop\"]\n"))), keys(&fits));
    // Hyper-parameters of the other methods at their defaults change nothing either.
    let explicit = with_coop("methods = [\"coop\", \"kgcoop\"]\nkgcoop_lambda = 8.0\n");
    let implicit = with_coop("methods = [\"coop\", \"kgcoop\"]\n");
    assert_eq!(keys(&coop_fits(&explicit)), keys(&coop_fits(&implicit)));
}

#[test]
fn each_method_is_its_own_fit_with_its_own_probe() {
    let plain = coop_fits(RECIPE);
    let all = coop_fits(&with_coop("methods = [\"coop\", \"kgcoop\", \"prograd\"]\n"));
    assert_eq!(all.len(), 3 * plain.len());
    // Methods outer, losses inner, then fractions and seeds: plain CoOp's fits come first, unchanged.
    assert_eq!(keys(&all[..plain.len()]), keys(&plain));
    let probes: Vec<&str> = all.iter().step_by(4).map(|f| f.config.probe.as_str()).collect();
    assert_eq!(probes, ["ce", "mcm", "kgcoop+ce", "kgcoop+mcm", "prograd+ce", "prograd+mcm"]);
    let distinct: std::collections::BTreeSet<&FitKey> = all.iter().map(|f| &f.key).collect();
    assert_eq!(distinct.len(), all.len());
    // The key holds the method and only the non-default hyper-parameters.
    let method_json = |f: &FitSpec| serde_json::to_value(&f.config.method).unwrap()["method"].clone();
    assert_eq!(method_json(&all[8]), serde_json::json!({"name": "kgcoop"}));
    assert_eq!(method_json(&all[16]), serde_json::json!({"name": "prograd"}));
    let tuned = coop_fits(&with_coop(
        "methods = [\"coop\", \"kgcoop\", \"prograd\"]\nkgcoop_lambda = 2.0\nprograd_temperature = 4.0\n",
    ));
    assert_eq!(method_json(&tuned[8]), serde_json::json!({"name": "kgcoop", "lambda": 2.0}));
    assert_eq!(method_json(&tuned[16]), serde_json::json!({"name": "prograd", "temperature": 4.0}));
    assert_eq!(keys(&tuned[..8]), keys(&plain), "a KgCoOp / ProGrad setting leaves CoOp's keys alone");
    assert!(tuned[8..].iter().zip(&all[8..]).all(|(a, b)| a.key != b.key));
    // A method alone.
    let kg = coop_fits(&with_coop("methods = [\"kgcoop\"]\n"));
    assert_eq!(keys(&kg), keys(&all[8..16]));
}

/// `augment` reaches the fits of the methods that train on images only (in their keys), and leaves
/// the others' keys as they were.
#[test]
fn augment_is_in_the_image_methods_keys_only() {
    let methods = "methods = [\"coop\", \"maple\", \"promptsrc\", \"hicropl\"]\n";
    let plain = coop_fits(&with_coop(methods));
    let augmented = coop_fits(&with_coop(&format!("{methods}augment = \"crop-flip\"\n")));
    assert_eq!(plain.len(), augmented.len());
    let n = plain.len() / 4;
    assert_eq!(keys(&augmented[..n]), keys(&plain[..n]), "CoOp's fits are not augmented");
    for (a, p) in augmented[n..].iter().zip(&plain[n..]) {
        assert_ne!(a.key, p.key, "{}", a.config.probe);
        let json = serde_json::to_value(&a.config.method).unwrap();
        assert_eq!(json["augment"], "crop-flip");
        assert!(serde_json::to_value(&p.config.method).unwrap().get("augment").is_none());
    }
}

/// HiCroPL (issue #25) is a method like the others: its own fits and probes, its reference values
/// left out of the key, a changed value in it, and the dry run weighing it as PromptSRC.
#[test]
fn hicropl_is_accepted_and_keyed_apart() {
    let plain = coop_fits(RECIPE);
    let all = coop_fits(&with_coop("methods = [\"coop\", \"promptsrc\", \"hicropl\"]\n"));
    assert_eq!(all.len(), 3 * plain.len());
    assert_eq!(keys(&all[..8]), keys(&plain), "CoOp's fits keep their keys");
    let probes: Vec<&str> = all.iter().step_by(4).map(|f| f.config.probe.as_str()).collect();
    assert_eq!(probes, ["ce", "mcm", "promptsrc+ce", "promptsrc+mcm", "hicropl+ce", "hicropl+mcm"]);
    let distinct: std::collections::BTreeSet<&FitKey> = all.iter().map(|f| &f.key).collect();
    assert_eq!(distinct.len(), all.len());
    let method_json = |f: &FitSpec| serde_json::to_value(&f.config.method).unwrap()["method"].clone();
    assert_eq!(method_json(&all[16]), serde_json::json!({"name": "hicropl"}));
    // The reference values spelled out are the defaults: same keys.
    let explicit = coop_fits(&with_coop(
        "methods = [\"hicropl\"]\nhicropl_depth = 12\nhicropl_n_ctx = 16\nhicropl_cross_layer = 6\n\
         hicropl_lambda = 12.0\nhicropl_adam_eps = 1e-3\n",
    ));
    assert_eq!(keys(&explicit), keys(&all[16..]));
    // A changed value enters the key (the tiny test CLIP has 3 blocks: depth 3, cross layer 2).
    let tuned = coop_fits(&with_coop(
        "methods = [\"coop\", \"promptsrc\", \"hicropl\"]\nhicropl_depth = 3\nhicropl_cross_layer = 2\n\
         hicropl_n_ctx = 4\nhicropl_lambda = 8.0\nhicropl_adam_eps = 1e-8\n",
    ));
    assert_eq!(
        method_json(&tuned[16]),
        serde_json::json!({"name": "hicropl", "depth": 3, "n_ctx": 4, "cross_layer": 2, "lambda": 8.0,
                           "adam_eps": 1e-8})
    );
    assert_eq!(keys(&tuned[..16]), keys(&all[..16]), "HiCroPL's settings leave the others' keys alone");
    assert!(tuned[16..].iter().zip(&all[16..]).all(|(a, b)| a.key != b.key));
    // The dry run counts a HiCroPL fit as a PromptSRC one: three tower passes per step.
    let cost = |methods: &str| {
        let recipe = parse(&with_coop(methods)).unwrap();
        summarize(&recipe, &expand(&recipe)).per_regime["coop"].fit_passes
    };
    let (hicropl, promptsrc) = (cost("methods = [\"hicropl\"]\n"), cost("methods = [\"promptsrc\"]\n"));
    assert!((hicropl / cost("") - 3.0).abs() < 1e-12 && (hicropl - promptsrc).abs() < 1e-9, "{hicropl}");
}

#[test]
fn the_dry_run_and_the_shards_count_every_method() {
    let text = with_coop("methods = [\"coop\", \"kgcoop\", \"prograd\"]\n");
    let recipe = parse(&text).unwrap();
    let fits = expand(&recipe);
    let s = summarize(&recipe, &fits);
    assert_eq!(s.per_regime["coop"].fits, 24);
    assert_eq!(s.per_regime["coop"].records, 24);
    let plain = parse(RECIPE).unwrap();
    let p = summarize(&plain, &expand(&plain));
    // KgCoOp costs what CoOp does, ProGrad twice (two backward passes per step).
    let ratio = s.per_regime["coop"].fit_passes / p.per_regime["coop"].fit_passes;
    assert!((ratio - 4.0).abs() < 1e-12, "{ratio}");
    for n in [2, 3, 5] {
        let shards = assign(&recipe, &fits, n);
        assert_eq!(shards.len(), fits.len());
        assert!(shards.iter().all(|&i| i < n));
        // Every shard gets work: the 24 CoOp fits are weighed with their method's cost.
        assert!((0..n).all(|i| shards.contains(&i)), "{n}: {shards:?}");
    }
}

#[test]
fn bad_methods_and_values_are_named_with_key_and_line() {
    let cases = [
        (
            "methods = [\"maple\"]\npromptsrc_depth = 3",
            "regimes.coop.promptsrc_depth",
            "applies to method `promptsrc`",
        ),
        (
            "methods = [\"promptsrc\"]\npromptsrc_gpa_std = 0.0",
            "regimes.coop.promptsrc_gpa_std",
            "a positive number",
        ),
        ("methods = [\"coop\"]\nmaple_depth = 3", "regimes.coop.maple_depth", "applies to method `maple`"),
        ("methods = [\"maple\"]\nmaple_n_ctx = 0", "regimes.coop.maple_n_ctx", "must be >= 1"),
        (
            "methods = [\"coop\", \"kgcoop\"]\naugment = \"crop-flip\"",
            "regimes.coop.augment",
            "applies to the methods that train on images (maple, promptsrc, hicropl)",
        ),
        ("methods = [\"maple\"]\naugment = \"flip\"", "regimes.coop.augment", "unknown augment `flip`"),
        (
            "methods = [\"kgcop\"]",
            "regimes.coop.methods[0]",
            "unknown CoOp method `kgcop`; expected one of coop, kgcoop, prograd, maple, promptsrc, hicropl",
        ),
        (
            "methods = [\"maple\"]\nhicropl_depth = 3",
            "regimes.coop.hicropl_depth",
            "applies to method `hicropl`",
        ),
        (
            "methods = [\"coop\"]\nhicropl_adam_eps = 1e-8",
            "regimes.coop.hicropl_adam_eps",
            "applies to method `hicropl`",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_depth = 1",
            "regimes.coop.hicropl_depth",
            "prompt depth must be >= 2, got 1",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_n_ctx = 0",
            "regimes.coop.hicropl_n_ctx",
            "context tokens must be >= 1",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_cross_layer = 0",
            "regimes.coop.hicropl_cross_layer",
            "cross layer must be >= 1, got 0",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_depth = 3\nhicropl_cross_layer = 3",
            "regimes.coop.hicropl_cross_layer",
            "cross layer 3 must be less than its prompt depth 3",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_depth = 3",
            "regimes.coop.hicropl_depth",
            "cross layer 6 (the default) must be less than its prompt depth 3",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_cross_layer = 12",
            "regimes.coop.hicropl_cross_layer",
            "must be less than its prompt depth 12",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_lambda = -1.0",
            "regimes.coop.hicropl_lambda",
            "HiCroPL's λ -1 must be a finite number >= 0",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_adam_eps = 0.0",
            "regimes.coop.hicropl_adam_eps",
            "Adam epsilon 0 must be a positive number",
        ),
        (
            "methods = [\"hicropl\"]\nhicropl_adam_eps = inf",
            "regimes.coop.hicropl_adam_eps",
            "must be a positive number",
        ),
        ("methods = [\"coop\", \"coop\"]", "regimes.coop.methods[1]", "listed twice"),
        ("methods = []", "regimes.coop.methods", "the list is empty"),
        (
            "methods = [\"kgcoop\"]\nkgcoop_lambda = -1.0",
            "regimes.coop.kgcoop_lambda",
            "must be a finite number >= 0",
        ),
        (
            "methods = [\"prograd\"]\nprograd_temperature = 0.0",
            "regimes.coop.prograd_temperature",
            "must be a positive number",
        ),
        (
            "methods = [\"prograd\"]\nprograd_lambda = nan",
            "regimes.coop.prograd_lambda",
            "must be a finite number >= 0",
        ),
        (
            "kgcoop_lambda = 4.0",
            "regimes.coop.kgcoop_lambda",
            "applies to method `kgcoop`, which `methods` does not list",
        ),
        (
            "methods = [\"kgcoop\"]\nprograd_lambda = 2.0",
            "regimes.coop.prograd_lambda",
            "applies to method `prograd`",
        ),
    ];
    for (lines, key, needle) in cases {
        let text = with_coop(&format!("{lines}\n"));
        let e = parse(&text).unwrap_err().to_string();
        let last = lines.lines().last().unwrap();
        let line = text.lines().position(|l| l == last).unwrap() + 1;
        assert!(e.contains(&format!("r.toml:{line}: key `{key}`")) && e.contains(needle), "{lines}: {e}");
    }
    // A method listed twice is one problem, not also a clash of its probes.
    let e = parse(&with_coop("methods = [\"coop\", \"coop\"]\n")).unwrap_err().to_string();
    assert!(!e.contains("problem(s)") && !e.contains("both write probe"), "{e}");
    // A loss label that repeats another method's probe.
    let text = with_coop("methods = [\"coop\", \"kgcoop\"]\n")
        .replace("name = \"mcm\"\n", "name = \"mcm\"\nlabel = \"kgcoop+ce\"\n");
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("key `regimes.coop.methods`") && e.contains("both write probe `kgcoop+ce`"), "{e}");
    // An unknown key of the section is still refused.
    let e = parse(&with_coop("method = \"kgcoop\"\n")).unwrap_err().to_string();
    assert!(e.contains("method"), "{e}");
}

#[test]
fn methods_round_trip_through_the_written_toml() {
    let text =
        with_coop("methods = [\"prograd\", \"coop\"]\nprograd_lambda = 0.5\nprograd_temperature = 2.0\n");
    let recipe = parse(&text).unwrap();
    let written = recipe.to_toml().unwrap();
    let again = parse(&written).unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(again, recipe, "{written}");
    assert_eq!(keys(&expand(&again)), keys(&expand(&recipe)));
    // Without `methods` the written recipe has none (so its bytes are those of before).
    assert!(!parse(RECIPE).unwrap().to_toml().unwrap().contains("methods"));
}
