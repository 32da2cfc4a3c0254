//! Helpers shared by the end-to-end tests of the `calibra` binary.
#![allow(dead_code)] // each test file uses the subset it needs

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the calibra binary built for these tests.
pub fn calibra(args: &[&str]) -> Output {
    calibra_with_env(args, &[])
}

/// Run the calibra binary with these environment variables set on top of the test's own.
pub fn calibra_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_calibra"));
    command.args(args).envs(env.iter().copied());
    command.output().expect("the calibra binary runs")
}

/// Path of a file shipped in `examples/`.
pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name).display().to_string()
}

/// `calibra convert KIND SOURCE --out OUT EXTRA…`, required to succeed with every `needle` in its
/// stdout; the stdout.
pub fn convert_ok(kind: &str, source: &Path, out: &Path, extra: &[&str], needles: &[&str]) -> String {
    let args = ["convert", kind, source.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let run = calibra(&[&args[..], extra].concat());
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    for needle in needles {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }
    stdout
}

/// `calibra train --regime full --epochs 1 --lr 1e-3` of `encoder` on `data` into the store `store`,
/// required to succeed; the one fit's saved model directory.
pub fn train_full_one_epoch(encoder: &Path, data: &str, store: &Path) -> PathBuf {
    let out = calibra(&[
        "train",
        "--encoder",
        encoder.to_str().unwrap(),
        "--data",
        data,
        "--regime",
        "full",
        "--epochs",
        "1",
        "--lr",
        "1e-3",
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fits = fit_dirs(store);
    assert_eq!(fits.len(), 1);
    fits[0].join("model")
}

/// The fit directories (`fits/*`) of the run store `store`, sorted.
pub fn fit_dirs(store: &Path) -> Vec<PathBuf> {
    let mut fits: Vec<PathBuf> =
        fs::read_dir(store.join("fits")).unwrap().map(|e| e.unwrap().path()).collect();
    fits.sort();
    fits
}

/// Run calibra, require success, and parse stdout as one JSON document.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = calibra(args);
    assert!(out.status.success(), "calibra {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// `calibra features --encoder ENCODER --data DATA --split test --out OUT`, required to succeed; the
/// width of the feature tensor it wrote (read from the safetensors header).
pub fn feature_width(encoder: &Path, data: &str, out: &Path) -> u64 {
    let args = ["features", "--encoder", encoder.to_str().unwrap(), "--data", data, "--split", "test"];
    let run = calibra(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let bytes = fs::read(out).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let (_, entry) = header
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.starts_with("features"))
        .expect("a features tensor");
    entry["shape"][1].as_u64().expect("a 2-D features tensor")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures")
}

/// `dir/tiny-vit`: the transformers-made tiny ViT fixture of calibra-models with a 30×30
/// preprocessor config (mean / std 0.5), as a checkpoint directory calibra can train and embed with.
pub fn tiny_vit_checkpoint(dir: &Path) -> PathBuf {
    let ck = dir.join("tiny-vit");
    fs::create_dir_all(&ck).unwrap();
    for f in ["config.json", "model.safetensors"] {
        fs::copy(fixtures().join("vit").join(f), ck.join(f)).unwrap();
    }
    fs::write(
        ck.join("preprocessor_config.json"),
        r#"{"do_resize": true, "size": {"height": 30, "width": 30}, "resample": 2,
            "do_rescale": true, "rescale_factor": 0.00392156862745098,
            "do_normalize": true, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}"#,
    )
    .unwrap();
    ck
}

/// `dir/tiny-clip`: the tiny random CLIP fixture with the CLIP tokenizer files and CLIP's
/// normalisation at 30×30.
pub fn tiny_clip_checkpoint(dir: &Path) -> PathBuf {
    let ck = dir.join("tiny-clip");
    fs::create_dir_all(&ck).unwrap();
    for f in ["config.json", "model.safetensors"] {
        fs::copy(fixtures().join("clip").join(f), ck.join(f)).unwrap();
    }
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        fs::copy(fixtures().join("tokenizer/hf").join(f), ck.join(f)).unwrap();
    }
    fs::write(
        ck.join("preprocessor_config.json"),
        r#"{"do_resize": true, "size": {"height": 30, "width": 30}, "resample": 3,
            "do_rescale": true, "rescale_factor": 0.00392156862745098, "do_normalize": true,
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711]}"#,
    )
    .unwrap();
    ck
}

/// A grid the `prior` executor runs today (no encoder is read): 2 datasets × 5 fractions × 5 seeds
/// = 50 fits per encoder name, on synthetic data.
pub const PRIOR_RECIPE: &str = r#"seeds = [0, 1, 2, 3, 4]
label_fractions = [0.01, 0.05, 0.1, 0.25, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
name = "none"
source = "hf:calibra/none"

[[datasets]]
spec = "synth:derm?n=150"

[[datasets]]
spec = "synth:chest?n=150"
shift = [{ name = "chest-b", spec = "synth:chest-site-b?n=150" }]

[perturbations]
names = ["jpeg", "contrast"]
severities = [1, 3]
label_fractions = [1.0]

[regimes.frozen]
probes = ["prior"]
"#;

/// `dir/tiny-siglip`: the fixture checkpoint with a 30×30 preprocessor config (mean / std 0.5, as
/// google/siglip-*), `spiece.model` unless `with_tokenizer` is false.
pub fn tiny_siglip_checkpoint(dir: &Path, with_tokenizer: bool) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/siglip_model");
    let ck = dir.join("tiny-siglip");
    fs::create_dir_all(&ck).unwrap();
    let mut files = vec!["config.json", "model.safetensors", "tokenizer_config.json"];
    if with_tokenizer {
        files.push("spiece.model");
    }
    for f in files {
        fs::copy(fixture.join(f), ck.join(f)).unwrap();
    }
    fs::write(
        ck.join("preprocessor_config.json"),
        r#"{"do_resize": true, "size": {"height": 30, "width": 30}, "resample": 2,
            "do_rescale": true, "rescale_factor": 0.00392156862745098, "do_normalize": true,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}"#,
    )
    .unwrap();
    ck
}

/// Every file under `dir` (relative path → bytes), in path order; directories are implied by their files.
pub fn tree_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The ids and row-major logits of a calibra predictions CSV (`id,label,logit…`).
pub fn read_logits(csv: &Path) -> (Vec<String>, Vec<f64>) {
    let text = fs::read_to_string(csv).unwrap();
    let mut ids = Vec::new();
    let mut logits = Vec::new();
    for line in text.lines().skip(1) {
        let mut cells = line.split(',');
        ids.push(cells.next().unwrap().to_string());
        cells.next(); // label
        logits.extend(cells.map(|c| c.parse::<f64>().unwrap()));
    }
    (ids, logits)
}

/// The LoRA adapter `adapter` (with its head), loaded back onto the checkpoint `ck`, predicts the
/// clean logits recorded in `predictions` (a CSV of the store) for the dataset `data`, within 1e-5.
pub fn assert_adapter_reproduces(ck: &Path, adapter: &Path, predictions: &Path, data: &str) {
    use calibra_data::{DatasetSpec, LoadOptions, load_dataset};
    use calibra_train::features::{FeatureCondition, preprocess_for};
    use calibra_train::fine_tune::{load_adapted_lora, predict_logits};
    let (ids, recorded) = read_logits(predictions);
    let device = burn::tensor::Device::flex();
    let model = load_adapted_lora(ck, adapter, &device).unwrap();
    let dataset = load_dataset(&DatasetSpec::parse(data).unwrap(), &LoadOptions::default()).unwrap();
    let rows: Vec<usize> =
        ids.iter().map(|id| dataset.samples.iter().position(|s| &s.id == id).unwrap()).collect();
    let preprocess = preprocess_for(ck).unwrap();
    let again =
        predict_logits(&model, &dataset, &rows, &preprocess, FeatureCondition::Clean, 16, &device).unwrap();
    assert_eq!(again.len(), recorded.len());
    let worst = again.iter().zip(&recorded).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-5, "adapter logits differ from the recorded ones by {worst}");
}

/// Runs `calibra run` on the recipe text `recipe` from the repository root (so that its relative
/// checkpoint paths resolve) into a fresh store, requires success, and returns every record of the
/// store's `runs.jsonl`.
pub fn run_recipe_records(recipe: &str) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("recipe.toml");
    std::fs::write(&file, recipe).unwrap();
    let store = dir.path().join("store");
    let out = Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(["run", &file.display().to_string(), "--out", &store.display().to_string()])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(store.join("runs.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The one record of `records` whose probe is `probe`, and its metric `name`.
pub fn probe_metric(records: &[serde_json::Value], probe: &str, name: &str) -> f64 {
    let found: Vec<&serde_json::Value> = records.iter().filter(|r| r["probe"] == probe).collect();
    assert_eq!(found.len(), 1, "one clean record of {probe}");
    found[0]["metrics"][name].as_f64().unwrap()
}
