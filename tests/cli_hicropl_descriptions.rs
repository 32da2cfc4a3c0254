//! `calibra train --method hicropl --hicropl-descriptions FILE` on the shipped tiny CLIP: HiCroPL's
//! teacher from descriptions of each class (the reference's `gpt_file` JSON). A file with every class
//! of the dataset trains and writes a `hicropl+ce` record; a file missing a class fails naming the
//! class and the file; a malformed file is refused before anything runs, naming the file. A recipe
//! of two datasets with a file per dataset (`hicropl_descriptions = { derm = …, fundus = … }`) trains
//! each dataset's HiCroPL fit with its own file, and one that leaves a dataset out is refused.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::calibra;

const DATA: &str = "synth:derm?n=160&size=32";

/// Descriptions of `synth:derm`'s classes (its label names with `_` read as a space, as the
/// reference looks them up), leaving out `skip`.
fn descriptions(skip: Option<&str>) -> String {
    descriptions_of(calibra_data::SynthSuite::Derm, skip)
}

/// Descriptions of the classes of `suite`, leaving out `skip`.
fn descriptions_of(suite: calibra_data::SynthSuite, skip: Option<&str>) -> String {
    let names = suite.label_space().names;
    let map: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .map(|n| n.replace('_', " "))
        .filter(|n| Some(n.as_str()) != skip)
        .map(|n| {
            let sentences =
                vec![format!("A dermoscopy image of {n}."), format!("A skin lesion: {n}, up close.")];
            (n, serde_json::json!(sentences))
        })
        .collect();
    serde_json::to_string_pretty(&map).unwrap()
}

fn train(descriptions: &Path, store: &Path) -> std::process::Output {
    let ck = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    calibra(&[
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--regime",
        "coop",
        "--method",
        "hicropl",
        "--hicropl-depth",
        "3",
        "--hicropl-cross-layer",
        "2",
        "--hicropl-n-ctx",
        "4",
        "--hicropl-descriptions",
        descriptions.to_str().unwrap(),
        "--epochs",
        "1",
        "--calibrators",
        "none",
        "--out",
        store.to_str().unwrap(),
    ])
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn hicropl_trains_with_descriptions_of_every_class() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "derm_prompt.json", &descriptions(None));
    let store = tmp.path().join("store");
    let out = train(&file, &store);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0]["regime"].as_str(), records[0]["probe"].as_str()),
        (Some("coop"), Some("hicropl+ce"))
    );
    let accuracy = records[0]["metrics"]["accuracy"].as_f64().unwrap();
    assert!(accuracy.is_finite() && (0.0..=1.0).contains(&accuracy), "{accuracy}");
    // The store's recipe names the file, so `calibra run` of it trains the same fit.
    let recipe = fs::read_to_string(store.join("journal/recipe.toml")).unwrap();
    assert!(recipe.contains(&format!("hicropl_descriptions = \"{}\"", file.display())), "{recipe}");
}

#[test]
fn a_class_missing_from_the_descriptions_is_named_with_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "partial.json", &descriptions(Some("basal cell carcinoma")));
    let out = train(&file, &tmp.path().join("store"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("HiCroPL descriptions file `{}`", file.display()))
            && err.contains("no sentences for class \"basal cell carcinoma\""),
        "{err}"
    );
}

#[test]
fn malformed_descriptions_are_refused_before_training() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "bad.json", "{\"nevus\": []}");
    let store = tmp.path().join("store");
    let out = train(&file, &store);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("regimes.coop.hicropl_descriptions")
            && err.contains(&format!("HiCroPL descriptions file `{}`", file.display()))
            && err.contains("class \"nevus\" has no sentences"),
        "{err}"
    );
    assert!(!store.join("runs.jsonl").exists(), "nothing ran");
    // With another method the flag is refused.
    let out = calibra(&[
        "train",
        "--encoder",
        "e",
        "--data",
        DATA,
        "--regime",
        "coop",
        "--method",
        "maple",
        "--hicropl-descriptions",
        file.to_str().unwrap(),
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--hicropl-descriptions applies to --method hicropl, not --method maple"), "{err}");
}

/// `[regimes.coop]` HiCroPL on `synth:derm` and `synth:fundus` with `descriptions` (a TOML value).
fn two_dataset_recipe(descriptions: &str) -> String {
    let ck = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    format!(
        "seeds = [0]\nlabel_fractions = [1.0]\ncalibrators = [\"none\"]\n\n[[encoders]]\nsource = \"{}\"\n\n\
         [[datasets]]\nspec = \"{DATA}\"\n\n[[datasets]]\nspec = \"synth:fundus?n=160&size=32\"\n\n\
         [regimes.coop]\nn_ctx = 4\nepochs = 1\nlr = 2e-3\nmethods = [\"hicropl\"]\nhicropl_depth = 3\n\
         hicropl_cross_layer = 2\nhicropl_n_ctx = 4\nhicropl_descriptions = {descriptions}\n\n\
         [[losses]]\nname = \"ce\"\n",
        ck.display()
    )
}

#[test]
fn a_recipe_trains_each_dataset_with_its_own_descriptions_file() {
    let tmp = tempfile::tempdir().unwrap();
    // Each file describes its own dataset's classes only: a fit given the other's would fail.
    let derm = write(tmp.path(), "derm_prompt.json", &descriptions(None));
    let fundus =
        write(tmp.path(), "fundus_prompt.json", &descriptions_of(calibra_data::SynthSuite::Fundus, None));
    let table = format!("{{ derm = \"{}\", fundus = \"{}\" }}", derm.display(), fundus.display());
    let recipe = write(tmp.path(), "recipe.toml", &two_dataset_recipe(&table));
    let store = tmp.path().join("store");
    let out = calibra(&["run", recipe.to_str().unwrap(), "--out", store.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let mut trained: Vec<(String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| (r["dataset"].as_str().unwrap().to_string(), r["probe"].as_str().unwrap().to_string()))
        .collect();
    trained.sort();
    assert_eq!(
        trained,
        [("derm".to_string(), "hicropl+ce".to_string()), ("fundus".into(), "hicropl+ce".into())]
    );

    // Without fundus's entry the recipe is refused before anything runs, naming the key and dataset.
    let table = format!("{{ derm = \"{}\" }}", derm.display());
    let recipe = write(tmp.path(), "partial.toml", &two_dataset_recipe(&table));
    let store = tmp.path().join("store-partial");
    let out = calibra(&["run", recipe.to_str().unwrap(), "--out", store.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("key `regimes.coop.hicropl_descriptions`")
            && err.contains("HiCroPL trains on dataset `fundus`")
            && err.contains("(it names: derm)"),
        "{err}"
    );
    assert!(!store.join("runs.jsonl").exists(), "nothing ran");
}
