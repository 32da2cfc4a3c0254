//! `calibra train --regime full` on a timm ViT: RETFound's tiny MAE checkpoint (calibra-models'
//! fixture), converted by `calibra convert retfound`, fine-tunes end to end and its saved model is a
//! timm checkpoint (`save_for_hf` names, `attn.qkv` fused) that reloads with the trained weights.

mod common;

use std::fs;
use std::path::Path;

use burn::tensor::Device;
use calibra_models::EncoderModel;
use common::{convert_ok, train_full_one_epoch};

fn qkv(dir: &Path) -> Vec<f32> {
    match calibra_models::Encoder::load_dir(dir, &Device::flex()).unwrap().model {
        EncoderModel::TimmVit(m) => {
            m.blocks[0].attn.q_proj.base.weight.val().into_data().try_to_vec::<f32>().unwrap()
        }
        _ => panic!("{} did not load as a timm ViT", dir.display()),
    }
}

#[test]
fn full_fine_tuning_of_a_converted_retfound_saves_a_timm_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tmp.path().join("retfound");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/calibra-models/tests/fixtures/retfound/mae_pretrain.pth");
    convert_ok("retfound", &source, &ck, &["--num-heads", "4"], &[]);
    let model = train_full_one_epoch(&ck, "synth:fundus?n=48&size=40", &tmp.path().join("store"));
    assert!(model.join("classifier.safetensors").is_file());

    // timm's names, qkv fused, no classifier in the encoder file.
    let bytes = fs::read(model.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let names = st.names();
    assert!(names.contains(&"blocks.0.attn.qkv.weight") && names.contains(&"fc_norm.weight"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("q_proj") || n.starts_with("head.")), "{names:?}");
    assert_ne!(qkv(&ck), qkv(&model), "full fine-tuning moves the attention weights");
}
