//! `calibra train --regime full` on a ResNet (issue #17 item 5): the tiny transformers ResNet fixture
//! fine-tunes end to end, its BatchNorms train on batch statistics (their running statistics move;
//! `num_batches_tracked` is kept as loaded), and the saved model is a transformers-layout checkpoint
//! that reloads. LoRA on it is refused before any work.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use burn::tensor::Device;
use calibra_models::EncoderModel;
use common::{calibra, train_full_one_epoch};

const DATA: &str = "synth:derm?n=64&size=32";

fn resnet(dir: &Path) -> calibra_models::resnet::ResNet {
    match calibra_models::Encoder::load_dir(dir, &Device::flex()).unwrap().model {
        EncoderModel::ResNet(m) => m,
        _ => panic!("{} did not load as a ResNet", dir.display()),
    }
}

fn values(t: burn::tensor::Tensor<1>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// The fixture plus the image processor config a checkpoint ships (32 px, no crop).
fn checkpoint(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/calibra-models/tests/fixtures/resnet/hf_bottleneck");
    let ck = dir.join("resnet");
    fs::create_dir_all(&ck).unwrap();
    for f in ["config.json", "model.safetensors"] {
        fs::copy(src.join(f), ck.join(f)).unwrap();
    }
    let pre = r#"{"do_resize": true, "size": {"height": 32, "width": 32}, "resample": 2,
        "do_center_crop": false, "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}"#;
    fs::write(ck.join("preprocessor_config.json"), pre).unwrap();
    ck
}

#[test]
fn full_fine_tuning_trains_a_resnet_and_saves_a_reloadable_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let store = tmp.path().join("store");
    let model = train_full_one_epoch(&ck, DATA, &store);
    assert!(model.join("classifier.safetensors").is_file());
    // The saved checkpoint reloads as a ResNet (transformers names; `resnet_parity.rs` checks that
    // every name and BatchNorm counter round-trips).
    let (before, after) = (resnet(&ck), resnet(&model));
    let stem = |m: &calibra_models::resnet::ResNet| values(m.embedder.normalization.running_mean.value());
    assert_ne!(stem(&before), stem(&after), "BatchNorm must train on batch statistics");
    let conv = |m: &calibra_models::resnet::ResNet| {
        m.stages[3].layers[0].layer[2].convolution.weight.val().into_data().try_to_vec::<f32>().unwrap()
    };
    assert_ne!(conv(&before), conv(&after), "full fine-tuning moves the convolutions");
    assert!(!before.num_batches_tracked.is_empty());
    assert_eq!(before.num_batches_tracked, after.num_batches_tracked);

    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r["regime"] == "full"), "{records:?}");
}

#[test]
fn lora_on_a_resnet_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let out = calibra(&[
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--regime",
        "lora",
        "--epochs",
        "1",
        "--out",
        tmp.path().join("store").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // Refused up front by the recipe check (calibra-run's LORA_MODEL_TYPES), before any image is
    // read; `resnet_parity.rs` checks calibra-models' own refusal (which names `full`).
    assert!(stderr.contains("model_type `resnet`") && stderr.contains("LoRA is implemented for"), "{stderr}");
}
