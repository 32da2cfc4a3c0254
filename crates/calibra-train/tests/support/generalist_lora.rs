//! Shared by the streamed-training and unreadable-image tests: the shipped `generalist` tiny ViT with
//! LoRA branches (r 2, α 4 on q/v, seed 5) and a head, and the bit patterns of a model's weights.
//!
//! Included with `#[path]`, so some items may be unused in one of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::tensor::Device;
use calibra_models::Encoder;
use calibra_models::lora::LoraConfig;
use calibra_train::fine_tune::{Adaptation, EncoderClassifier};

/// The shipped `generalist` checkpoint.
pub fn checkpoint() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/generalist")
}

/// The generalist with fresh LoRA branches on q/v and a `k`-class head, on `device`.
pub fn lora_classifier(k: usize, device: &Device) -> EncoderClassifier {
    let encoder = Encoder::load_dir(&checkpoint(), device).unwrap();
    let dim = encoder.classification_dim();
    let lora: LoraConfig =
        serde_json::from_str(r#"{"r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"]}"#).unwrap();
    EncoderClassifier::new(encoder, dim, k, &Adaptation::Lora(Box::new(lora)), 5, device).unwrap().0
}

/// Every float parameter of `model` as the bit patterns of its f32 values, in traversal order.
pub fn weights<M: Module>(model: &M) -> Vec<u32> {
    struct Collect<'a>(&'a mut Vec<u32>);
    impl burn::module::ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, p: &burn::module::Param<burn::tensor::Tensor<D>>) {
            self.0.extend(p.val().into_data().try_into_vec_as::<f32>().unwrap().iter().map(|v| v.to_bits()));
        }
    }
    let mut out = Vec::new();
    model.visit(&mut Collect(&mut out));
    out
}
