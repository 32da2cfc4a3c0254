//! `calibra pretrain` end to end: a tiny pretraining run writes a Hugging Face checkpoint that loads
//! through `Encoder::load_dir`, with its preprocessor config and model card, and the same command
//! gives the same bytes; the same for the contrastive tiny CLIP (`--clip`), which also loads through
//! `ClipModel::load` / `ClipTokenizer`, and whose shipped copy matches transformers.

use std::path::Path;
use std::process::{Command, Output};

use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::Encoder;
use calibra_models::clip::{ClipModel, ZeroShotClassifier};
use calibra_models::tokenizer::ClipTokenizer;

fn calibra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra")).args(args).output().expect("the calibra binary runs")
}

/// A very small ViT (hidden 16, 1 layer) trained for one epoch on 20 shape images.
fn tiny(out: &Path, name: &str, task: Option<&str>) -> Output {
    let out = out.to_str().unwrap();
    let mut args = vec![
        "pretrain",
        "--name",
        name,
        "--out",
        out,
        "--epochs",
        "1",
        "--hidden",
        "16",
        "--layers",
        "1",
        "--heads",
        "2",
        "--mlp",
        "32",
        "--batch-size",
        "8",
    ];
    if let Some(task) = task {
        args.extend(["--task", task]);
    }
    calibra(&args)
}

const TASK: &str = "synth:shapes?n=20&size=32&seed=3";

#[test]
fn pretrain_writes_a_loadable_deterministic_checkpoint() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let first = tiny(a.path(), "tiny", Some(TASK));
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let second = tiny(b.path(), "tiny", Some(TASK));
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));

    let dir = a.path().join("tiny");
    for file in ["config.json", "model.safetensors", "preprocessor_config.json", "MODEL_CARD.md"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    assert_eq!(
        bytes,
        std::fs::read(b.path().join("tiny/model.safetensors")).unwrap(),
        "same command, other bytes"
    );

    let device = Device::flex();
    let encoder = Encoder::load_dir(&dir, &device).expect("the checkpoint loads");
    assert_eq!(encoder.num_layers(), 1);
    let pre = calibra_data::PreprocessConfig::from_hf_file(&dir.join("preprocessor_config.json")).unwrap();
    assert_eq!(pre.mean, [0.5; 3]);
    assert_eq!(pre.std, [0.5; 3]);
    let images = burn::tensor::Tensor::<4>::zeros([2, 3, 32, 32], &device);
    assert_eq!(encoder.embed(images).unwrap().dims(), [2, 16]);

    let card = std::fs::read_to_string(dir.join("MODEL_CARD.md")).unwrap();
    assert!(card.contains("calibra pretrain --name tiny"), "{card}");
    assert!(card.contains("'synth:shapes?n=20&size=32&seed=3'"), "the card quotes the task: {card}");
    assert!(card.contains("held-out accuracy"), "{card}");

    // Training moved the weights away from the untrained initialisation of the same seed.
    let init = tempfile::tempdir().unwrap();
    let untrained = tiny(init.path(), "tiny", None);
    assert!(untrained.status.success(), "{}", String::from_utf8_lossy(&untrained.stderr));
    assert_ne!(bytes, std::fs::read(init.path().join("tiny/model.safetensors")).unwrap());
    let card = std::fs::read_to_string(init.path().join("tiny/MODEL_CARD.md")).unwrap();
    assert!(card.contains("Training: none"), "{card}");
}

#[test]
fn bad_task_and_bad_panel_member_are_named() {
    let out = tempfile::tempdir().unwrap();
    let run = tiny(out.path(), "x", Some("synth:nosuch?n=10"));
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("synth:nosuch?n=10") && err.contains("unknown synthetic suite"), "{err}");

    let run = calibra(&["pretrain", "--panel", "--only", "nobody", "--out", out.path().to_str().unwrap()]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("nobody") && err.contains("derm-specialist"), "{err}");
}

/// The shipped directories are the panel's members, and every one that is committed loads.
#[test]
fn shipped_checkpoints_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints");
    let device = Device::flex();
    for plan in calibra_train::pretrain::panel(1, 1) {
        let dir = root.join(&plan.name);
        assert!(dir.join("MODEL_CARD.md").is_file(), "{} has no model card", dir.display());
        let encoder = Encoder::load_dir(&dir, &device).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_eq!(encoder.num_layers(), plan.arch.num_layers);
        let size = std::fs::metadata(dir.join("model.safetensors")).unwrap().len();
        assert!(size < 5 << 20, "{}: {size} bytes", dir.display());
    }
}

/// A very small contrastive run of the tiny CLIP (15 images per task, one epoch, batch 8).
fn tiny_clip(out: &Path) -> Output {
    calibra(&[
        "pretrain",
        "--clip",
        "--out",
        out.to_str().unwrap(),
        "--n",
        "15",
        "--clip-epochs",
        "1",
        "--clip-batch-size",
        "8",
    ])
}

#[test]
fn clip_pretrain_writes_a_deterministic_clip_that_loads_everywhere() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let first = tiny_clip(a.path());
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let second = tiny_clip(b.path());
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));

    let dir = a.path().join("tiny-clip");
    for file in [
        "config.json",
        "model.safetensors",
        "preprocessor_config.json",
        "vocab.json",
        "merges.txt",
        "tokenizer.json",
        "tokenizer_config.json",
        "MODEL_CARD.md",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
        if file != "MODEL_CARD.md" {
            assert_eq!(
                std::fs::read(dir.join(file)).unwrap(),
                std::fs::read(b.path().join("tiny-clip").join(file)).unwrap(),
                "same command, other bytes in {file}"
            );
        }
    }

    let device = Device::flex();
    let (model, config) = ClipModel::load(dir.to_str().unwrap(), &device).expect("ClipModel::load");
    assert_eq!(config.vision.image_size, 32);
    assert!(model.logit_scale > 0.0 && model.logit_scale <= 100f32.ln() + 1e-6, "{}", model.logit_scale);
    let tokenizer = ClipTokenizer::from_dir(&dir).expect("the tokenizer loads");
    assert_eq!(tokenizer.vocab_size(), config.text.vocab_size);
    assert_eq!(tokenizer.context_length(), 77);
    // Every word of the shipped captions is one learnt token.
    assert_eq!(tokenizer.encode("a dermoscopy image of a melanoma.").unwrap().len(), 2 + 7);
    // The encoder path (a CLIP checkpoint as a frozen image encoder) and the preprocessor.
    let encoder = Encoder::load_dir(&dir, &device).expect("the CLIP vision path loads");
    let images = burn::tensor::Tensor::<4>::zeros([2, 3, 32, 32], &device);
    assert_eq!(encoder.embed(images.clone()).unwrap().dims(), [2, 64]);
    let pre = calibra_data::PreprocessConfig::from_hf_file(&dir.join("preprocessor_config.json")).unwrap();
    assert!((pre.mean[0] - 0.481_454_66).abs() < 1e-6, "{:?}", pre.mean);
    let names: Vec<String> = ["nevus", "melanoma"].map(String::from).to_vec();
    let head =
        ZeroShotClassifier::new(&model, &tokenizer, &names, &["a photo of a {}.".to_string()], &device)
            .expect("zero-shot head");
    assert_eq!(head.logits(&model, images).unwrap().dims(), [2, 2]);

    let card = std::fs::read_to_string(dir.join("MODEL_CARD.md")).unwrap();
    assert!(card.contains("calibra pretrain --clip --out"), "{card}");
    assert!(card.contains("P1 top-1") && card.contains("synth:chest?n=15"), "{card}");

    // `--panel --only tiny-clip` is the same member.
    let run =
        calibra(&["pretrain", "--panel", "--only", "tiny-clip,nobody", "--out", a.path().to_str().unwrap()]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("nobody") && err.contains("tiny-clip"), "{err}");
}

/// The committed tiny-clip loads through calibra and matches transformers on the same files
/// (`scripts/golden/tiny_clip_hf_check.py`): token ids exactly, features and logits within 1e-4.
#[test]
fn shipped_tiny_clip_matches_transformers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny_clip_hf.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    assert!(bytes.len() < 1_500_000, "{} bytes", bytes.len());
    // The card records the SHA-256 of the weights it describes; the golden file, of those it read.
    let card = std::fs::read_to_string(dir.join("MODEL_CARD.md")).unwrap();
    assert!(
        card.contains(golden["weights_sha256"].as_str().unwrap()),
        "checkpoints/tiny-clip is not the one scripts/golden/tiny_clip_hf_check.py read: re-run it"
    );

    let device = Device::flex();
    let (model, _) = ClipModel::load(dir.to_str().unwrap(), &device).unwrap();
    let want_scale = golden["logit_scale"].as_f64().unwrap() as f32;
    assert_eq!(model.logit_scale, want_scale);
    let tokenizer = ClipTokenizer::from_dir(&dir).unwrap();
    let ids = |key: &str| -> Vec<Vec<u32>> {
        golden[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect())
            .collect()
    };
    let (ids_raw, ids_77) = (ids("ids"), ids("ids_77"));
    for (i, caption) in golden["captions"].as_array().unwrap().iter().enumerate() {
        let caption = caption.as_str().unwrap();
        assert_eq!(tokenizer.encode(caption).unwrap(), ids_raw[i], "{caption}");
        assert_eq!(tokenizer.encode_padded(caption).unwrap(), ids_77[i], "{caption}");
    }

    let floats = |v: &serde_json::Value| -> Vec<f32> {
        fn walk(v: &serde_json::Value, out: &mut Vec<f32>) {
            match v {
                serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                x => out.push(x.as_f64().unwrap() as f32),
            }
        }
        let mut out = Vec::new();
        walk(v, &mut out);
        out
    };
    // The script's pixels: x[i] = (i·7919 mod 97) / 48 − 1 over the flat index of [4, 3, 32, 32].
    let values: Vec<f32> = (0..4 * 3 * 32 * 32).map(|i| ((i * 7919 % 97) as f32 / 48.0) - 1.0).collect();
    let pixels = Tensor::<4>::from_data(TensorData::new(values, [4, 3, 32, 32]), &device);
    let close = |name: &str, got: Tensor<2>, want: Vec<f32>| {
        let got = got.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len(), "{name}");
        let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
        eprintln!("{name}: max |ours − transformers| = {worst:e}");
        assert!(worst <= 1e-4, "{name}: max |ours − transformers| = {worst}");
    };
    close("image features", model.image_features(pixels.clone()).unwrap(), floats(&golden["image_features"]));
    close("text features", model.text_features(&ids_77, &device).unwrap(), floats(&golden["text_features"]));
    let out = model.forward(pixels, &ids_77, false).unwrap();
    close("logits_per_image", out.logits_per_image, floats(&golden["logits_per_image"]));
}

#[test]
fn a_contrastive_batch_of_one_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let run =
        calibra(&["pretrain", "--clip", "--out", out.path().to_str().unwrap(), "--clip-batch-size", "1"]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("batch_size (1)") && err.contains("negatives"), "{err}");
    assert!(!out.path().join("tiny-clip").exists(), "nothing is written before the plan is checked");
}
