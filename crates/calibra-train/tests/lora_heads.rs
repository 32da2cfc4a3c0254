//! The fine-tuning classifier's head matches transformers' `<Family>ForImageClassification` (issue #17
//! item 2): for ViT, DINOv2 (without and with registers), CLIP vision, SigLIP vision and ViT-MAE (as
//! `ViTForImageClassification`, since transformers has no MAE classifier), an adapter +
//! head saved by calibra loads with
//! `PeftModel.from_pretrained(<Family>ForImageClassification.from_pretrained(base, num_labels=K), dir)`
//! and gives calibra's logits, and a peft-made adapter (random non-zero factors, rsLoRA, the classifier
//! in `modules_to_save`) loads here with `load_adapted_lora` and gives peft's logits, both within 1e-4.
//!
//! Fixtures: `tests/fixtures/lora_heads/`, from `scripts/golden/lora_peft_heads.py` (peft 0.21.2,
//! transformers 5.24.0). `CALIBRA_HEADS_WRITE_DIR=DIR` makes the calibra → peft test write the
//! adapters it saves (and its logits) to `DIR/<family>/` for `lora_peft_heads.py --calibra-made DIR`.

use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::Encoder;
use calibra_models::hf::floats::F32View;
use calibra_models::lora::peft::PeftAdapter;
use calibra_models::lora::{LoraConfig, LoraModel};
use calibra_train::fine_tune::{Adaptation, EncoderClassifier, FineTuned, load_adapted_lora, save_adapted};
use safetensors::SafeTensors;

const TOL: f32 = 1e-4;

/// family, base checkpoint (repository-relative), K, hidden size.
const FAMILIES: [(&str, &str, usize, usize); 6] = [
    ("vit", "crates/calibra-models/tests/fixtures/lora/base", 4, 48),
    ("dinov2", "crates/calibra-models/tests/fixtures/dinov2", 3, 48),
    ("dinov2_registers", "crates/calibra-models/tests/fixtures/lora_families/dinov2_registers/base", 3, 32),
    ("clip", "crates/calibra-models/tests/fixtures/lora_families/clip/base", 3, 32),
    ("siglip", "crates/calibra-train/tests/fixtures/lora_heads/siglip_base", 3, 32),
    // A ViTMAEModel checkpoint, fine-tuned as transformers' ViTForImageClassification.
    ("vit_mae", "crates/calibra-models/tests/fixtures/vit_mae", 3, 48),
];

/// The adapters calibra makes: rsLoRA with a rank pattern, on names every family has.
const CALIBRA_MADE: &str = r#"{"r": 3, "lora_alpha": 5, "target_modules": ["q_proj", "v_proj", "fc1"],
    "use_rslora": true, "rank_pattern": {"fc1": 2}}"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lora_heads")
}

fn read_f32(path: &Path, name: &str) -> (Vec<usize>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let t = file.tensor(name).unwrap_or_else(|e| panic!("{}: {name}: {e}", path.display()));
    let v = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    (t.shape().to_vec(), v)
}

fn images(family: &str, device: &Device) -> Tensor<4> {
    let (s, data) = read_f32(&fixtures().join(family).join("golden.safetensors"), "pixel_values");
    Tensor::from_data(TensorData::new(data, [s[0], s[1], s[2], s[3]]), device)
}

fn values<const D: usize>(t: Tensor<D>) -> (Vec<usize>, Vec<f32>) {
    (t.dims().to_vec(), t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap())
}

/// Max |got − want|, shapes checked.
fn diff<const D: usize>(what: &str, got: Tensor<D>, want: &(Vec<usize>, Vec<f32>)) -> f32 {
    let (shape, got) = values(got);
    assert_eq!(shape, want.0, "{what}: shape");
    got.iter().zip(&want.1).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)
}

/// peft → calibra: peft's adapter on `<Family>ForImageClassification` (random non-zero factors,
/// rsLoRA, a random classifier in `modules_to_save`) loads with `load_adapted_lora`; the classifier
/// input equals the one transformers fed its classifier (captured with a hook) and the logits equal
/// peft's, within 1e-4.
#[test]
fn peft_made_classifier_adapters_give_peft_logits_here() {
    let device = Device::flex();
    let facts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("heads.json")).unwrap()).unwrap();
    for (family, base, k, hidden) in FAMILIES {
        let golden = fixtures().join(family).join("golden.safetensors");
        let adapter_dir = fixtures().join(family).join("peft_made");
        let adapter = PeftAdapter::read(&adapter_dir).unwrap();
        assert!(adapter.config.use_rslora, "{family}: the fixture is rsLoRA");
        assert_eq!(adapter.config.modules_to_save.as_deref(), Some(&["classifier".to_string()][..]));
        let model = load_adapted_lora(&repo().join(base), &adapter_dir, &device).unwrap();
        let dim = model.encoder.classification_dim();
        assert_eq!(dim as u64, facts[family]["classifier_in_features"].as_u64().unwrap(), "{family}");
        assert_eq!(dim, if family.starts_with("dinov2") { 2 * hidden } else { hidden }, "{family}");

        let x = images(family, &device);
        let feature = model.encoder.classification_feature(x.clone()).unwrap();
        let d_in = diff(family, feature, &read_f32(&golden, "peft_made_classifier_input"));
        let want = read_f32(&golden, "peft_made_logits");
        assert_eq!(want.0, vec![2, k]);
        let d = diff(family, model.try_logits(x.clone()).unwrap(), &want);
        eprintln!(
            "{family}: peft-made adapter: classifier input max |diff| {d_in:e}, logits max |diff| {d:e}"
        );
        assert!(d_in < TOL, "{family}: classifier input vs transformers: max |diff| {d_in:e}");
        assert!(d < TOL, "{family}: logits vs peft: max |diff| {d:e}");

        // The factors matter: the same head on the bare base gives clearly other logits.
        let bare = Encoder::load_dir(&repo().join(base), &device).unwrap();
        let bare = EncoderClassifier { encoder: bare, head: model.head.clone() };
        let effect = diff(family, bare.try_logits(x.clone()).unwrap(), &want);
        assert!(effect > 0.05, "{family}: the adapter barely changes the logits ({effect})");

        // The head input matters: ViT's is the frozen probes' feature (`embed`), bit for bit; for
        // CLIP and SigLIP the same head on `embed` (their pooled CLS / attention-pool state) is far off.
        let embed = model.encoder.embed(x.clone()).unwrap();
        let feature = model.encoder.classification_feature(x).unwrap();
        match family {
            "vit" | "vit_mae" => {
                assert_eq!(values(embed).1, values(feature).1, "{family}: the head input must stay `embed`")
            }
            "clip" | "siglip" => {
                let off = diff(family, model.head.forward(embed), &want);
                assert!(off > 0.05, "{family}: a head on `embed` would pass too ({off})");
            }
            _ => assert_eq!(embed.dims()[1] * 2, feature.dims()[1], "{family}: [CLS ‖ mean of patches]"),
        }
    }
}

/// Give every branch a deterministic non-zero B (a fresh branch has B = 0 and would prove nothing).
fn set_nonzero_b<M: LoraModel>(model: &mut M) {
    for (position, (_, mut slot)) in model.lora_linears().unwrap().into_iter().enumerate() {
        let Some(branch) = slot.branch_mut() else { continue };
        let [rows, cols] = branch.b.val().dims();
        let device = branch.b.val().device();
        let data: Vec<f32> =
            (0..rows * cols).map(|k| 0.3 * ((1 + k * 7 + position * 13) as f32 * 0.37).sin()).collect();
        branch.b = Param::from_tensor(Tensor::from_data(TensorData::new(data, [rows, cols]), &device));
    }
}

/// calibra → peft: the classifier built here (`EncoderClassifier::new` with LoRA, seeded A and head,
/// a deterministic non-zero B), saved by `save_adapted`; the saved adapter is byte for byte the
/// committed one that peft 0.21.2 loaded onto `<Family>ForImageClassification.from_pretrained(base,
/// num_labels=K)` (`lora_peft_heads.py --calibra-made`), and peft's logits equal calibra's within 1e-4.
/// `load_adapted_lora` reads the saved directory back to the same logits.
#[test]
fn adapters_saved_here_give_calibra_logits_in_peft() {
    let device = Device::flex();
    let config: LoraConfig = serde_json::from_str(CALIBRA_MADE).unwrap();
    let write_dir = std::env::var_os("CALIBRA_HEADS_WRITE_DIR").map(PathBuf::from);
    for (family, base, k, _) in FAMILIES {
        let encoder = Encoder::load_dir(&repo().join(base), &device).unwrap();
        let dim = encoder.classification_dim();
        let adaptation = Adaptation::Lora(Box::new(config.clone()));
        let (mut model, wrapped) = EncoderClassifier::new(encoder, dim, k, &adaptation, 7, &device).unwrap();
        assert!(!wrapped.is_empty(), "{family}");
        set_nonzero_b(&mut model.encoder);
        let x = images(family, &device);
        let logits = model.try_logits(x.clone()).unwrap();
        let bare = Encoder::load_dir(&repo().join(base), &device).unwrap();
        let bare = EncoderClassifier { encoder: bare, head: model.head.clone() };
        let bare_logits = values(bare.try_logits(x.clone()).unwrap());
        let fitted = FineTuned {
            // Recorded as the adapter's `base_model_name_or_path`: repository-relative, as peft's.
            checkpoint: PathBuf::from(base),
            model,
            adaptation,
            wrapped,
            losses: Vec::new(),
            total_steps: 0,
            resumed_from: None,
            curve: Vec::new(),
            best_epoch: None,
            stopped_early: false,
            unreadable: Vec::new(),
        };
        let tmp = tempfile::tempdir().unwrap();
        let out = match &write_dir {
            Some(d) => d.join(family),
            None => tmp.path().join(family),
        };
        save_adapted(&fitted, &out).unwrap();
        if let Some(d) = &write_dir {
            let (shape, data) = values(logits.clone());
            let bytes = safetensors::serialize([("logits", F32View::new(shape, &data))], None).unwrap();
            std::fs::write(d.join(family).join("calibra_logits.safetensors"), bytes).unwrap();
        }

        // What calibra saved loads back here to the same logits.
        let reloaded = load_adapted_lora(&repo().join(base), &out, &device).unwrap();
        let d_self = diff(family, reloaded.try_logits(x.clone()).unwrap(), &values(logits.clone()));
        assert!(d_self < 1e-5, "{family}: save_adapted → load_adapted_lora: max |diff| {d_self:e}");

        let committed = fixtures().join(family).join("calibra_made");
        if write_dir.is_some() && !committed.exists() {
            continue; // regenerating: peft has not seen these adapters yet
        }
        for file in ["adapter_model.safetensors", "adapter_config.json"] {
            let ours = std::fs::read(out.join(file)).unwrap();
            let theirs = std::fs::read(committed.join(file)).unwrap();
            assert!(ours == theirs, "{family}/{file}: differs from the committed adapter peft was run on");
        }
        let peft = read_f32(&committed.join("peft_logits.safetensors"), "logits");
        let d = diff(family, logits, &peft);
        eprintln!("{family}: calibra-made adapter: logits vs peft max |diff| {d:e}");
        assert!(d < TOL, "{family}: logits vs peft: max |diff| {d:e}");
        // peft applied the factors: the same head on the bare base is clearly elsewhere.
        let effect = peft.1.iter().zip(&bare_logits.1).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(effect > 0.05, "{family}: the adapter barely changes peft's logits ({effect})");
    }
}

/// A head whose width is not the family's classifier input is refused, naming both, not left to
/// panic in the matmul: a `d`-wide head on DINOv2 (whose classifier takes `2·d`), at construction and
/// in a saved adapter.
#[test]
fn a_head_of_the_wrong_width_is_refused_by_name() {
    let device = Device::flex();
    let base = repo().join(FAMILIES[1].1);
    let encoder = Encoder::load_dir(&base, &device).unwrap();
    let err = EncoderClassifier::new(encoder, 48, 3, &Adaptation::Head, 1, &device).unwrap_err().to_string();
    assert!(
        err.contains("48") && err.contains("96") && err.contains("Dinov2ForImageClassification"),
        "{err}"
    );

    let mut adapter = PeftAdapter::read(&fixtures().join("dinov2").join("peft_made")).unwrap();
    let w = adapter.saved.get_mut("classifier.weight").unwrap();
    w.shape = vec![3, 48];
    w.data.truncate(3 * 48);
    let dir = tempfile::tempdir().unwrap();
    adapter.write(dir.path()).unwrap();
    let err = load_adapted_lora(&base, dir.path(), &device).err().unwrap().to_string();
    assert!(err.contains("classifier.weight") && err.contains("96 wide"), "{err}");

    let mut adapter = PeftAdapter::read(&fixtures().join("vit").join("peft_made")).unwrap();
    adapter.saved.get_mut("classifier.bias").unwrap().data.pop();
    adapter.saved.get_mut("classifier.bias").unwrap().shape = vec![3];
    let dir = tempfile::tempdir().unwrap();
    adapter.write(dir.path()).unwrap();
    let err = load_adapted_lora(&repo().join(FAMILIES[0].1), dir.path(), &device).err().unwrap().to_string();
    assert!(err.contains("classifier.bias"), "{err}");
}
