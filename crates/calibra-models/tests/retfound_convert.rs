//! RETFound's MAE checkpoints converted by `calibra_models::timm::retfound::convert_retfound`, against
//! RETFound's own model and loading code (scripts/golden/encoders_retfound.py runs its models_vit.py and
//! writes tests/fixtures/retfound/): the encoder's feature within 1e-4 of RETFound's
//! `forward_features`, for the pre-training checkpoint with global pooling (fresh `fc_norm`) and with
//! the class token, and for a fine-tuned checkpoint (its own `fc_norm`).

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::Encoder;
use calibra_models::timm::retfound::{FcNormSource, RetfoundPool, convert_retfound};

mod common;
use common::{assert_close_to, golden_images, read_tensors};

const TOL: f32 = 1e-4;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/retfound").join(name)
}

fn features_of(dir: &Path, golden: &str) {
    let device = Device::flex();
    let g = read_tensors(&fixture("golden.safetensors"));
    let encoder = Encoder::load_dir(dir, &device).unwrap();
    let got = encoder.embed(golden_images(&g, "pixel_values", &device)).unwrap();
    assert_close_to(golden, &got, &g[golden], TOL);
}

#[test]
fn a_pretraining_checkpoint_gives_retfounds_global_pool_feature() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("retfound");
    let done =
        convert_retfound(&fixture("mae_pretrain.pth"), &out, None, Some(4), RetfoundPool::Avg).unwrap();
    assert_eq!(done.source.entry.as_deref(), Some("model"));
    let s = done.shape;
    assert_eq!((s.embed_dim, s.depth, done.num_heads, s.patch, s.img_size()), (32, 2, 4, 8, 32));
    assert_eq!(s.mlp_hidden, 128);
    assert!(done.qkv_bias);
    assert_eq!(done.fc_norm, Some(FcNormSource::FreshInit));
    // mask_token + decoder_embed (2) + decoder_pos_embed + decoder_norm (2) + decoder_pred (2) + one
    // decoder block (12); the final norm (2).
    assert_eq!(done.dropped.get("MAE decoder"), Some(&20), "{:?}", done.dropped);
    assert_eq!(done.dropped.get("final norm (unused with global pooling)"), Some(&2));
    features_of(&out, "pretrain_avg");
}

#[test]
fn the_class_token_feature_keeps_the_final_norm() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("retfound-cls");
    let done =
        convert_retfound(&fixture("mae_pretrain.pth"), &out, Some("model"), Some(4), RetfoundPool::Token)
            .unwrap();
    assert_eq!(done.fc_norm, None);
    features_of(&out, "pretrain_token");
}

#[test]
fn a_finetuned_checkpoint_keeps_its_fc_norm_and_drops_its_head() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("retfound-ft");
    let done = convert_retfound(&fixture("finetuned.pth"), &out, None, Some(4), RetfoundPool::Avg).unwrap();
    assert_eq!(done.fc_norm, Some(FcNormSource::Checkpoint));
    assert_eq!(done.dropped.get("task head"), Some(&2));
    features_of(&out, "finetuned_avg");
}

#[test]
fn bad_requests_are_refused_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let source = fixture("mae_pretrain.pth");
    // Width 32: the head count cannot default to width / 64.
    let e = convert_retfound(&source, &out, None, None, RetfoundPool::Avg).unwrap_err().to_string();
    assert!(e.contains("--num-heads"), "{e}");
    let e = convert_retfound(&source, &out, None, Some(5), RetfoundPool::Avg).unwrap_err().to_string();
    assert!(e.contains("must divide the width 32"), "{e}");
    // RETFound's DINOv2 checkpoints keep their weights under `teacher`: refused by name.
    let dinov2 = fixture("dinov2_teacher.pth");
    let e = convert_retfound(&dinov2, &out, None, Some(4), RetfoundPool::Avg).unwrap_err().to_string();
    assert!(e.contains("DINOv2") && e.contains("dinov2_teacher.pth"), "{e}");
    // An entry the file does not have.
    let e =
        convert_retfound(&source, &out, Some("nope"), Some(4), RetfoundPool::Avg).unwrap_err().to_string();
    assert!(e.contains("'nope'") && e.contains("mae_pretrain.pth"), "{e}");
    // The class token needs the final norm, which a global-pool fine-tune does not have.
    let e = convert_retfound(&fixture("finetuned.pth"), &out, None, Some(4), RetfoundPool::Token)
        .unwrap_err()
        .to_string();
    assert!(e.contains("use --pool avg"), "{e}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written");
}
