//! An adapter trained here loads in PEFT and gives PEFT's logits (issue #7, "Verified").
//!
//! The fixture `tests/fixtures/lora_trained/` holds two adapters trained by
//! `examples/lora_trained_adapter.rs` (r 8, α 16, dropout 0.05, head in `modules_to_save`; q/v and all
//! projections), the evaluation images with the trained model's own logits (`ours.safetensors`), and
//! the logits that peft 0.21.2 + transformers 5.24.0 compute after `PeftModel.from_pretrained`
//! (`peft_logits.safetensors`, from `scripts/golden/lora_trained_adapter.py`). Here each adapter is read
//! with `PeftAdapter::read`, loaded into a fresh base encoder, and its logits are compared with both
//! (f32, 1e-4). A second test trains and checks that the frozen base stays bit-identical.
//!
//! Its own test binary: training re-seeds burn's process-wide random stream (dropout masks).

use burn::module::Module;
use burn::tensor::Device;
use calibra_models::Encoder;
use calibra_models::lora::peft::PeftAdapter;
use calibra_models::lora::{TargetModules, load_adapter};
use calibra_train::build_loss;
use calibra_train::trainer::{TrainConfig, train};

#[path = "support/lora_vit_classifier.rs"]
mod lora_vit_classifier;
use lora_vit_classifier::*;

#[test]
fn adapters_trained_here_reproduce_peft_logits() {
    let device = Device::flex();
    let ours = read_safetensors(&fixture_dir().join("ours.safetensors"));
    let peft = read_safetensors(&fixture_dir().join("peft_logits.safetensors"));
    let images = &ours["pixel_values"];
    assert_eq!(images.shape, vec![N_EVAL, CHANNELS, SIDE, SIDE]);
    let layers = 3; // the base fixture's num_hidden_layers

    for (variant, targets) in VARIANTS {
        let adapter = PeftAdapter::read(&fixture_dir().join(variant)).unwrap();
        let c = &adapter.config;
        assert_eq!((c.r, c.lora_alpha, c.lora_dropout), (8, 16.0, 0.05), "{variant}: recipe");
        assert_eq!(
            c.target_modules,
            Some(TargetModules::Names(targets.iter().map(|s| s.to_string()).collect()))
        );
        assert_eq!(c.modules_to_save.as_deref(), Some(&["classifier".to_string()][..]));

        let mut encoder = Encoder::load_dir(&base_dir(), &device).unwrap();
        let loaded = load_adapter(&mut encoder, &adapter, &device).unwrap();
        assert_eq!(loaded.len(), targets.len() * layers, "{variant}: wrapped modules {loaded:?}");
        let here = logits_with_head(&encoder, &adapter.saved, images, &device);

        let want = &peft[&format!("logits.{variant}")];
        assert_eq!(want.shape, vec![N_EVAL, CLASSES]);
        let d_peft = max_abs_diff(&here, &want.data);
        assert!(d_peft < 1e-4, "{variant}: logits vs peft, max |diff| {d_peft}");
        let d_ours = max_abs_diff(&here, &ours[&format!("logits.{variant}")].data);
        assert!(d_ours < 1e-4, "{variant}: logits vs the trained model's own, max |diff| {d_ours}");

        // The LoRA factors matter: the trained head on the bare base gives clearly other logits, so
        // a factor that were dropped, transposed or mis-scaled could not pass the comparison above.
        let bare = Encoder::load_dir(&base_dir(), &device).unwrap();
        let head_only = logits_with_head(&bare, &adapter.saved, images, &device);
        let effect = max_abs_diff(&head_only, &want.data);
        assert!(effect > 0.1, "{variant}: the adapter barely changes the logits ({effect})");
    }
}

#[test]
fn lora_training_leaves_every_base_weight_bit_identical() {
    let device = Device::flex().autodiff();
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    let data = synthetic_set(16, 5);
    let config = TrainConfig { epochs: 2, batch_size: 8, lr: 5e-3, checkpoint_every: 0, ..train_config() };
    let (_, all_linear) = VARIANTS[1];
    let model = lora_classifier(all_linear, 1, &device);
    let frozen_before = frozen_weights(&model.encoder);
    let head_before = head_to_torch(&model.classifier);
    // Every base tensor is in the snapshot: CLS token, position embeddings, patch conv weight + bias,
    // 16 per block (2 LayerNorms, q/k/v/o, fc1, fc2: weight + bias each) × 3 blocks, the final
    // LayerNorm's 2 = 54, the 56 tensors of the checkpoint less the classifier's 2.
    assert_eq!(frozen_before.len(), 4 + 16 * 3 + 2);

    let outcome = train(model, &data, loss.as_ref(), &config, &device, None, &mut |_| {}).unwrap();
    assert_eq!(outcome.total_steps, 4);
    let trained = outcome.model.valid();
    assert!(frozen_weights(&trained.encoder) == frozen_before, "a frozen base weight changed");

    // ...while what is trainable did train (so the check above is not vacuous).
    assert_ne!(head_to_torch(&trained.classifier), head_before, "the head did not train");
    let adapter =
        calibra_models::lora::extract_adapter(&trained.encoder, &lora_config(all_linear), Default::default())
            .unwrap();
    assert_eq!(adapter.factors.len(), 18);
    for (name, f) in &adapter.factors {
        assert!(f.b.data.iter().any(|v| *v != 0.0), "`{name}`: lora_B never left zero");
    }
}
