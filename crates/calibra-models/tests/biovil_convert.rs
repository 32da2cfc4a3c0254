//! BioViL's image model converted by `calibra_models::resnet::biovil::convert_biovil`, against
//! hi-ml-multimodal 0.2.2's `ImageModel` (scripts/golden/encoders_biovil.py writes
//! tests/fixtures/biovil/): the encoder's feature within 1e-4 of hi-ml's `img_embedding`, and the
//! recorded preprocessing against hi-ml's BioViL transform on a grayscale PNG.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::Encoder;
use calibra_models::resnet::biovil::convert_biovil;

mod common;
use common::{assert_close_to, golden_images, read_tensors};

const TOL: f32 = 1e-4;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/biovil").join(name)
}

#[test]
fn the_converted_encoder_gives_hi_mls_image_embedding() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("biovil");
    let done = convert_biovil(&fixture("image_model.pt"), &out, None).unwrap();
    assert_eq!(done.source.entry, None);
    assert_eq!(done.architecture, "resnet50");
    assert_eq!(done.depths, [1, 2, 1, 1]);
    assert_eq!(done.channels, [4, 8, 12, 16]);
    assert_eq!(done.features, 64);
    assert_eq!(done.dropped.get("joint-space projector"), Some(&8), "{:?}", done.dropped);
    assert_eq!(done.dropped.values().sum::<usize>(), 10, "{:?}", done.dropped);

    let device = Device::flex();
    let g = read_tensors(&fixture("golden.safetensors"));
    let encoder = Encoder::load_dir(&out, &device).unwrap();
    let got = encoder.embed(golden_images(&g, "pixel_values", &device)).unwrap();
    assert_close_to("img_embedding", &got, &g["img_embedding"], TOL);
}

#[test]
fn a_biovil_t_checkpoint_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let e = convert_biovil(&fixture("biovil_t_names.pt"), &out, None).unwrap_err().to_string();
    assert!(e.contains("BioViL-T") && e.contains("biovil_t_names.pt"), "{e}");
    // An entry that holds no BioViL weights.
    let e = convert_biovil(&fixture("image_model.pt"), &out, Some("projector")).unwrap_err().to_string();
    assert!(e.contains("encoder.encoder.conv1.weight") && e.contains("image_model.pt"), "{e}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written");
}
