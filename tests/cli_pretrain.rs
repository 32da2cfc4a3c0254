//! `calibra pretrain` end to end: a tiny pretraining run writes a Hugging Face checkpoint that loads
//! through `Encoder::load_dir`, with its preprocessor config and model card, and the same command
//! gives the same bytes.

use std::path::Path;
use std::process::{Command, Output};

use burn::tensor::Device;
use calibra_models::Encoder;

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
