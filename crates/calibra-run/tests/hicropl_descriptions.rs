//! `[regimes.coop] hicropl_descriptions`: HiCroPL's teacher from a descriptions file (the reference's
//! `gpt_file` JSON). The fit key holds the digest of the file's content, not its path: two copies
//! give one key, a changed sentence another, and without the key the fits keep the keys they had.
//! A bad file, or the key without method `hicropl`, is named with the key, the line and the file.

use std::path::{Path, PathBuf};

use calibra_crs::Regime;
use calibra_run::descriptions::{descriptions_sha256, read_descriptions};
use calibra_run::{FitKey, FitMethod, FitSpec, Recipe, ValidationOptions, expand};

const RECIPE: &str = r#"seeds = [0]
label_fractions = [1.0]
calibrators = ["none"]

[[encoders]]
source = "ENCODER"

[[datasets]]
spec = "synth:derm?n=40"

[regimes.coop]
n_ctx = 4
epochs = 2
lr = 2e-3
methods = ["coop", "hicropl"]
hicropl_depth = 3
hicropl_cross_layer = 2

[[losses]]
name = "ce"
"#;

const DESCRIPTIONS: &str = r#"{"nevus": ["A round, evenly brown mole."], "melanoma": ["An irregular, dark lesion.", "A mole of many colours."]}"#;

/// The shipped tiny CLIP, so that recipes validate with their paths checked.
fn tiny_clip() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/tiny-clip").display().to_string()
}

/// RECIPE with `lines` after `hicropl_cross_layer`.
fn recipe_with(lines: &str) -> String {
    RECIPE
        .replace("ENCODER", &tiny_clip())
        .replace("hicropl_cross_layer = 2\n", &format!("hicropl_cross_layer = 2\n{lines}"))
}

fn descriptions_line(path: &Path) -> String {
    format!("hicropl_descriptions = \"{}\"\n", path.display())
}

fn parse(text: &str, check_paths: bool) -> Result<Recipe, calibra_run::RunError> {
    Recipe::parse(text, "r.toml", ValidationOptions { check_paths })
}

fn coop_fits(text: &str) -> Vec<FitSpec> {
    let recipe = parse(text, true).unwrap_or_else(|e| panic!("{e}\n{text}"));
    expand(&recipe).into_iter().filter(|f| f.config.regime == Regime::Coop).collect()
}

fn keys(fits: &[FitSpec]) -> Vec<FitKey> {
    fits.iter().map(|f| f.key.clone()).collect()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn descriptions_key_hicropl_apart_from_the_template_teacher() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "derm_prompt.json", DESCRIPTIONS);
    let templates = coop_fits(&recipe_with(""));
    let described = coop_fits(&recipe_with(&descriptions_line(&file)));
    assert_eq!(templates.len(), 2);
    assert_eq!(described.len(), 2);
    assert_eq!(templates[0].key, described[0].key, "CoOp's fit is not HiCroPL's: same key");
    assert_ne!(templates[1].key, described[1].key, "HiCroPL's teacher changed: another key");
    assert_eq!(described[1].config.probe, "hicropl+ce");
    // In the key: the content's digest, never the path.
    let json = serde_json::to_value(&described[1].config.method).unwrap();
    let sha256 = descriptions_sha256(&read_descriptions(&file).unwrap());
    assert_eq!(json["descriptions"], serde_json::json!({ "sha256": sha256 }));
    assert!(!json.to_string().contains("derm_prompt"), "{json}");
    // Without the key there is no `descriptions` at all (the keys of before).
    let json = serde_json::to_value(&templates[1].config.method).unwrap();
    assert!(json.get("descriptions").is_none(), "{json}");
    // The executor gets the path.
    let FitMethod::Coop { descriptions: Some(d), .. } = &described[1].config.method else {
        panic!("no descriptions: {:?}", described[1].config.method)
    };
    assert_eq!((d.path.as_str(), d.sha256.as_deref()), (file.to_str().unwrap(), Some(sha256.as_str())));
    let FitMethod::Coop { descriptions, .. } = &described[0].config.method else { unreachable!() };
    assert_eq!(*descriptions, None, "only HiCroPL's fits carry the descriptions");
}

#[test]
fn equal_content_at_two_paths_gives_one_key_and_changed_content_another() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let first = write(a.path(), "d.json", DESCRIPTIONS);
    let copy = write(b.path(), "other-name.json", DESCRIPTIONS);
    // The same classes and sentences, laid out differently.
    let reformatted = write(
        b.path(),
        "pretty.json",
        "{\n  \"melanoma\": [\n    \"An irregular, dark lesion.\",\n    \"A mole of many colours.\"\n  ],\n  \
         \"nevus\": [\"A round, evenly brown mole.\"]\n}\n",
    );
    let key = |path: &Path| coop_fits(&recipe_with(&descriptions_line(path)))[1].key.clone();
    assert_eq!(key(&first), key(&copy));
    assert_eq!(key(&first), key(&reformatted));
    let changed = write(b.path(), "changed.json", &DESCRIPTIONS.replace("dark lesion", "dark spot"));
    assert_ne!(key(&first), key(&changed));
    let more = write(b.path(), "more.json", &DESCRIPTIONS.replace("}", ", \"vascular lesion\": [\"Red.\"]}"));
    assert_ne!(key(&first), key(&more));
    // The file rewritten in place re-keys the fit when the recipe is loaded again.
    let before = key(&first);
    std::fs::write(&first, DESCRIPTIONS.replace("brown", "tan")).unwrap();
    assert_ne!(key(&first), before);
}

#[test]
fn descriptions_round_trip_through_the_written_toml() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "d.json", DESCRIPTIONS);
    let recipe = parse(&recipe_with(&descriptions_line(&file)), true).unwrap();
    let written = recipe.to_toml().unwrap();
    assert!(written.contains(&descriptions_line(&file)), "{written}");
    assert!(!written.contains("sha256"), "{written}");
    let again = parse(&written, true).unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(again, recipe);
    assert_eq!(keys(&expand(&again)), keys(&expand(&recipe)));
}

#[test]
fn bad_descriptions_are_named_with_key_line_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let cases = [
        ("missing.json", None, "does not exist"),
        (
            "array.json",
            Some("[\"a photo\"]"),
            "expected a JSON object from class name to a list of sentences",
        ),
        ("broken.json", Some("{\"nevus\": [\"a\""), "not valid JSON"),
        ("empty.json", Some("{}"), "names no class"),
        ("no-sentences.json", Some("{\"nevus\": []}"), "class \"nevus\" has no sentences"),
        ("string.json", Some("{\"nevus\": \"a mole\"}"), "class \"nevus\": expected a list of sentences"),
        ("blank.json", Some("{\"nevus\": [\"a mole\", \"\"]}"), "class \"nevus\": sentence 2 is empty"),
        ("number.json", Some("{\"nevus\": [1]}"), "class \"nevus\": sentence 1 is a number, not a string"),
    ];
    for (name, content, needle) in cases {
        let path = match content {
            Some(text) => write(dir.path(), name, text),
            None => missing.clone(),
        };
        let text = recipe_with(&descriptions_line(&path));
        let e = parse(&text, true).unwrap_err().to_string();
        let line = text.lines().position(|l| l.starts_with("hicropl_descriptions")).unwrap() + 1;
        assert!(
            e.contains(&format!("r.toml:{line}: key `regimes.coop.hicropl_descriptions`"))
                && e.contains(&format!("HiCroPL descriptions file `{}`", path.display()))
                && e.contains(needle),
            "{name}: {e}"
        );
        // Unchecked paths (`--no-check-paths`, `calibra report` reading a store's recipe) load it.
        let recipe = parse(&text, false).unwrap_or_else(|e| panic!("{name}: {e}"));
        let fit = &expand(&recipe)[1];
        let FitMethod::Coop { descriptions: Some(d), .. } = &fit.config.method else { unreachable!() };
        assert_eq!(d.sha256, None, "{name}: no digest of an unreadable file");
    }
    let text = recipe_with("hicropl_descriptions = \"\"\n");
    let e = parse(&text, false).unwrap_err().to_string();
    assert!(e.contains("key `regimes.coop.hicropl_descriptions`") && e.contains("path is empty"), "{e}");
}

#[test]
fn descriptions_need_the_hicropl_method() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "d.json", DESCRIPTIONS);
    for methods in ["methods = [\"coop\", \"promptsrc\"]", "methods = [\"coop\"]"] {
        let text = recipe_with(&descriptions_line(&file))
            .replace("methods = [\"coop\", \"hicropl\"]", methods)
            .replace("hicropl_depth = 3\nhicropl_cross_layer = 2\n", "");
        for check_paths in [true, false] {
            let e = parse(&text, check_paths).unwrap_err().to_string();
            let line = text.lines().position(|l| l.starts_with("hicropl_descriptions")).unwrap() + 1;
            assert!(
                e.contains(&format!("r.toml:{line}: key `regimes.coop.hicropl_descriptions`"))
                    && e.contains("applies to method `hicropl`, which `methods` does not list"),
                "{methods}: {e}"
            );
        }
    }
    // Without `methods` (plain CoOp) too.
    let text = recipe_with(&descriptions_line(&file))
        .replace("methods = [\"coop\", \"hicropl\"]\n", "")
        .replace("hicropl_depth = 3\nhicropl_cross_layer = 2\n", "");
    let e = parse(&text, false).unwrap_err().to_string();
    assert!(e.contains("applies to method `hicropl`") && e.contains("(methods: coop)"), "{e}");
}
