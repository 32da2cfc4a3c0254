//! `[regimes.coop] hicropl_descriptions`: HiCroPL's teacher from a descriptions file (the reference's
//! `gpt_file` JSON). The fit key holds the digest of the file's content, not its path: two copies
//! give one key, a changed sentence another, and without the key the fits keep the keys they had.
//! A bad file, or the key without method `hicropl`, is named with the key, the line and the file.
//! The key is one file for every dataset or a table from dataset name to file; with the table each
//! dataset's HiCroPL fits hold its own file, so another dataset's file never re-keys them.

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

/// RECIPE with a second dataset, `fundus`, and `lines` after `hicropl_cross_layer`.
fn two_datasets_with(lines: &str) -> String {
    recipe_with(lines).replace(
        "[[datasets]]\nspec = \"synth:derm?n=40\"\n",
        "[[datasets]]\nspec = \"synth:derm?n=40\"\n\n[[datasets]]\nspec = \"synth:fundus?n=40\"\n",
    )
}

/// `hicropl_descriptions = { derm = "A", fundus = "B" }` for the given entries.
fn table_line(entries: &[(&str, &Path)]) -> String {
    let entries: Vec<String> =
        entries.iter().map(|(dataset, path)| format!("{dataset} = \"{}\"", path.display())).collect();
    format!("hicropl_descriptions = {{ {} }}\n", entries.join(", "))
}

/// (dataset, probe) → key of the coop fits.
fn keyed(fits: &[FitSpec]) -> Vec<(String, String, FitKey)> {
    fits.iter().map(|f| (f.config.dataset.name.clone(), f.config.probe.clone(), f.key.clone())).collect()
}

fn keys_of<'a>(keyed: &'a [(String, String, FitKey)], dataset: &str) -> Vec<&'a FitKey> {
    keyed.iter().filter(|(d, _, _)| d == dataset).map(|(_, _, k)| k).collect()
}

/// The path of a fit's descriptions, if it has some.
fn descriptions_path(fit: &FitSpec) -> Option<String> {
    match &fit.config.method {
        FitMethod::Coop { descriptions, .. } => descriptions.as_ref().map(|d| d.path.clone()),
        _ => None,
    }
}

const FUNDUS_DESCRIPTIONS: &str =
    r#"{"grade 0": ["A healthy retina."], "grade 1": ["A few microaneurysms."]}"#;

/// The string form keys its fits as before the table form existed (keys computed by the code of
/// commit 94a9dd5), and a table giving every dataset that same file keys them identically.
#[test]
fn the_string_form_keeps_its_keys_and_an_equal_table_gives_them_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "d.json", DESCRIPTIONS);
    let pinned = [
        ("derm", "ce", "4b381d0c3a47f0f6544b3020c7ed866c1f5b4a91cdba3248e16d72d23c30b0d0"),
        ("derm", "hicropl+ce", "af7c3ea5917403cf3ff319792e5c1622cb8b05e50546e52f6528ead31add2a6d"),
        ("fundus", "ce", "941d201e7f50e84f4fcfccf2302f77e81f23e8255dc57544eb05786a3c8fc1be"),
        ("fundus", "hicropl+ce", "ebd322c7ccc8302143d187e742d3b4940b5d18da3156589060e0d35514d7acbf"),
    ];
    // A hub id, not the checkout's tiny CLIP, so that the keys do not depend on where it lies.
    let hub = |text: String| text.replace(&tiny_clip(), "hf:org/clip");
    for lines in [descriptions_line(&file), table_line(&[("derm", &file), ("fundus", &file)])] {
        let text = hub(two_datasets_with(&lines));
        let recipe = parse(&text, false).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let got: Vec<(String, String, String)> = expand(&recipe)
            .iter()
            .map(|f| (f.config.dataset.name.clone(), f.config.probe.clone(), f.key.to_string()))
            .collect();
        let expected: Vec<(String, String, String)> =
            pinned.iter().map(|(d, p, k)| (d.to_string(), p.to_string(), k.to_string())).collect();
        assert_eq!(got, expected, "{lines}");
    }
}

/// With the table each dataset's HiCroPL fits hold its own file: changing, adding or removing
/// another dataset's file (or the dataset itself) leaves their keys.
#[test]
fn per_dataset_files_key_each_dataset_by_its_own_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let derm = write(dir.path(), "derm_prompt.json", DESCRIPTIONS);
    let fundus = write(dir.path(), "fundus_prompt.json", FUNDUS_DESCRIPTIONS);
    let fits = coop_fits(&two_datasets_with(&table_line(&[("derm", &derm), ("fundus", &fundus)])));
    assert_eq!(fits.len(), 4);
    let paths: Vec<(String, String, Option<String>)> = fits
        .iter()
        .map(|f| (f.config.dataset.name.clone(), f.config.probe.clone(), descriptions_path(f)))
        .collect();
    let show = |p: &Path| Some(p.display().to_string());
    assert_eq!(
        paths,
        [
            ("derm".into(), "ce".into(), None),
            ("derm".into(), "hicropl+ce".into(), show(&derm)),
            ("fundus".into(), "ce".into(), None),
            ("fundus".into(), "hicropl+ce".into(), show(&fundus)),
        ]
    );
    // Each fit's key holds its own file's digest.
    for (fit, file) in [(&fits[1], &derm), (&fits[3], &fundus)] {
        let json = serde_json::to_value(&fit.config.method).unwrap();
        let sha256 = descriptions_sha256(&read_descriptions(file).unwrap());
        assert_eq!(json["descriptions"], serde_json::json!({ "sha256": sha256 }));
    }
    let before = keyed(&fits);

    // fundus's file changed: derm's keys stay, fundus's HiCroPL key changes.
    let changed = write(dir.path(), "fundus_v2.json", &FUNDUS_DESCRIPTIONS.replace("healthy", "normal"));
    let after = keyed(&coop_fits(&two_datasets_with(&table_line(&[("derm", &derm), ("fundus", &changed)]))));
    assert_eq!(keys_of(&after, "derm"), keys_of(&before, "derm"));
    assert_eq!(after[2], before[2], "fundus's CoOp fit has no teacher");
    assert_ne!(after[3].2, before[3].2, "fundus's teacher changed");
    // The same, rewritten in place and the recipe loaded again.
    std::fs::write(&fundus, FUNDUS_DESCRIPTIONS.replace("few", "several")).unwrap();
    let after = keyed(&coop_fits(&two_datasets_with(&table_line(&[("derm", &derm), ("fundus", &fundus)]))));
    assert_eq!(keys_of(&after, "derm"), keys_of(&before, "derm"));
    assert_ne!(after[3].2, before[3].2);

    // A recipe of derm alone with derm's file: derm's keys are the same as with fundus beside it
    // (adding a dataset and its file does not re-key the finished fits).
    let alone = keyed(&coop_fits(&recipe_with(&table_line(&[("derm", &derm)]))));
    assert_eq!(keys_of(&alone, "derm"), keys_of(&before, "derm"));
    // While one merged file for both (the string form) re-keys derm's HiCroPL fit against derm's own
    // file: the digest is of the whole file.
    let merged = write(
        dir.path(),
        "merged.json",
        &DESCRIPTIONS.replace('}', &format!(", {}", FUNDUS_DESCRIPTIONS.trim_start_matches('{'))),
    );
    let merged = keyed(&coop_fits(&two_datasets_with(&descriptions_line(&merged))));
    assert_eq!(merged[0], before[0]);
    assert_ne!(merged[1].2, before[1].2);
}

#[test]
fn a_hicropl_dataset_the_table_does_not_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let derm = write(dir.path(), "derm_prompt.json", DESCRIPTIONS);
    let text = two_datasets_with(&table_line(&[("derm", &derm)]));
    let line = text.lines().position(|l| l.starts_with("hicropl_descriptions")).unwrap() + 1;
    for check_paths in [true, false] {
        let e = parse(&text, check_paths).unwrap_err().to_string();
        assert!(
            e.contains(&format!("r.toml:{line}: key `regimes.coop.hicropl_descriptions`"))
                && e.contains("HiCroPL trains on dataset `fundus`")
                && e.contains("(it names: derm)"),
            "{e}"
        );
    }
    // An empty table names no dataset: both are refused.
    let text = two_datasets_with("hicropl_descriptions = {}\n");
    let e = parse(&text, false).unwrap_err().to_string();
    assert!(
        e.contains("dataset `derm`")
            && e.contains("dataset `fundus`")
            && e.contains("(it names: no dataset)"),
        "{e}"
    );
    // Restricted to derm, the regime does not train HiCroPL on fundus: derm's entry is enough.
    let scoped =
        |lines: &str| two_datasets_with(lines).replace("[[losses]]", "datasets = [\"derm\"]\n\n[[losses]]");
    let fits = coop_fits(&scoped(&table_line(&[("derm", &derm)])));
    assert_eq!(
        fits.iter().map(descriptions_path).collect::<Vec<_>>(),
        [None, Some(derm.display().to_string())]
    );
    // So is an encoder without fundus.
    let text = two_datasets_with(&table_line(&[("derm", &derm)])).replace(
        "[[datasets]]\nspec = \"synth:derm",
        "datasets = [\"derm\"]\n\n[[datasets]]\nspec = \"synth:derm",
    );
    assert_eq!(coop_fits(&text).len(), 2, "{text}");
}

#[test]
fn a_table_entry_for_a_dataset_hicropl_does_not_train_on_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let derm = write(dir.path(), "derm_prompt.json", DESCRIPTIONS);
    let fundus = write(dir.path(), "fundus_prompt.json", FUNDUS_DESCRIPTIONS);
    // Not a dataset of the recipe.
    let text = recipe_with(&table_line(&[("derm", &derm), ("isic2019", &fundus)]));
    let line = text.lines().position(|l| l.starts_with("hicropl_descriptions")).unwrap() + 1;
    let e = parse(&text, true).unwrap_err().to_string();
    assert!(
        e.contains(&format!("r.toml:{line}: key `regimes.coop.hicropl_descriptions.isic2019`"))
            && e.contains("`isic2019` is not a dataset of this recipe")
            && e.contains("expected one of derm"),
        "{e}"
    );
    // Out of the regime's `datasets`.
    let text = two_datasets_with(&table_line(&[("derm", &derm), ("fundus", &fundus)]))
        .replace("[[losses]]", "datasets = [\"derm\"]\n\n[[losses]]");
    let line = text.lines().position(|l| l.starts_with("hicropl_descriptions")).unwrap() + 1;
    let e = parse(&text, true).unwrap_err().to_string();
    assert!(
        e.contains(&format!("r.toml:{line}: key `regimes.coop.hicropl_descriptions.fundus`"))
            && e.contains("HiCroPL does not train on dataset `fundus`")
            && e.contains("(datasets: derm)"),
        "{e}"
    );
}

/// Each file of the table is checked as the one file is, the error naming the dataset's entry, its
/// line and the file, in the inline table and in a `[regimes.coop.hicropl_descriptions]` table.
#[test]
fn a_bad_file_in_the_table_is_named_with_its_entry_line_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let derm = write(dir.path(), "derm_prompt.json", DESCRIPTIONS);
    let bad = write(dir.path(), "fundus_prompt.json", "{\"grade 0\": []}");
    let missing = dir.path().join("missing.json");
    let inline = two_datasets_with(&table_line(&[("derm", &derm), ("fundus", &bad)]));
    let table = two_datasets_with("").replace(
        "[[losses]]",
        &format!(
            "[regimes.coop.hicropl_descriptions]\nderm = \"{}\"\nfundus = \"{}\"\n\n[[losses]]",
            missing.display(),
            bad.display()
        ),
    );
    for (text, cases) in [
        (&inline, vec![("fundus", &bad, "class \"grade 0\" has no sentences")]),
        (
            &table,
            vec![
                ("derm", &missing, "does not exist"),
                ("fundus", &bad, "class \"grade 0\" has no sentences"),
            ],
        ),
    ] {
        let e = parse(text, true).unwrap_err().to_string();
        for (dataset, file, needle) in cases {
            let line = text
                .lines()
                .position(|l| {
                    l.starts_with(&format!("{dataset} = ")) || l.starts_with("hicropl_descriptions =")
                })
                .unwrap()
                + 1;
            let expected = format!(
                "r.toml:{line}: key `regimes.coop.hicropl_descriptions.{dataset}`: HiCroPL descriptions file `{}`",
                file.display()
            );
            assert!(e.contains(&expected) && e.contains(needle), "{expected}\n{e}");
        }
        // Unchecked paths load it; the fits of the unreadable file have no digest.
        let recipe = parse(text, false).unwrap_or_else(|e| panic!("{e}"));
        let hicropl: Vec<_> =
            expand(&recipe).into_iter().filter(|f| f.config.probe == "hicropl+ce").collect();
        let FitMethod::Coop { descriptions: Some(d), .. } = &hicropl[1].config.method else { unreachable!() };
        assert_eq!((d.path.as_str(), d.sha256.as_deref()), (bad.to_str().unwrap(), None));
    }
    let text = two_datasets_with(&format!(
        "hicropl_descriptions = {{ derm = \"{}\", fundus = \"\" }}\n",
        derm.display()
    ));
    let e = parse(&text, false).unwrap_err().to_string();
    assert!(
        e.contains("key `regimes.coop.hicropl_descriptions.fundus`") && e.contains("path is empty"),
        "{e}"
    );
    // Neither a string nor a table.
    let text = recipe_with("hicropl_descriptions = 3\n");
    let e = parse(&text, false).unwrap_err().to_string();
    assert!(
        e.contains("regimes.coop.hicropl_descriptions")
            && e.contains("a descriptions file (\"FILE\") or a table from dataset name to descriptions file"),
        "{e}"
    );
}

#[test]
fn the_table_round_trips_through_the_written_toml_and_needs_the_hicropl_method() {
    let dir = tempfile::tempdir().unwrap();
    let derm = write(dir.path(), "derm_prompt.json", DESCRIPTIONS);
    let fundus = write(dir.path(), "fundus_prompt.json", FUNDUS_DESCRIPTIONS);
    let text = two_datasets_with(&table_line(&[("derm", &derm), ("fundus", &fundus)]));
    let recipe = parse(&text, true).unwrap();
    let written = recipe.to_toml().unwrap();
    assert!(written.contains(&derm.display().to_string()) && !written.contains("sha256"), "{written}");
    let again = parse(&written, true).unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(again, recipe);
    assert_eq!(keys(&expand(&again)), keys(&expand(&recipe)));
    // Without method hicropl the table is refused as the string is (and not for its datasets).
    let text = text
        .replace("methods = [\"coop\", \"hicropl\"]", "methods = [\"coop\"]")
        .replace("hicropl_depth = 3\nhicropl_cross_layer = 2\n", "");
    let e = parse(&text, true).unwrap_err().to_string();
    assert!(
        e.contains("key `regimes.coop.hicropl_descriptions`")
            && e.contains("applies to method `hicropl`")
            && !e.contains("HiCroPL trains on"),
        "{e}"
    );
}
