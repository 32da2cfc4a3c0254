//! The crop-and-flip augmentation equals torchvision 0.29.2's `resized_crop` + `horizontal_flip` on
//! fixed boxes (tests/golden/augment.json, from scripts/golden/augment.py), within 1e-5.

use calibra_train::augment::{CropBox, resized_crop};

#[test]
fn resized_crop_and_flip_match_torchvision() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/augment.json");
    let g: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let floats = |v: &serde_json::Value| -> Vec<f32> {
        v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
    };
    let shape: Vec<usize> =
        g["shape"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
    let shape = [shape[0], shape[1], shape[2]];
    let image = floats(&g["image"]);
    let cases = g["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 9);
    let mut worst = 0.0f32;
    for case in cases {
        let n = |k: &str| case[k].as_u64().unwrap() as usize;
        let crop = CropBox { top: n("top"), left: n("left"), height: n("height"), width: n("width") };
        let flip = case["flip"].as_bool().unwrap();
        let mut out = vec![0.0; image.len()];
        resized_crop(&image, shape, crop, flip, &mut out);
        let want = floats(&case["out"]);
        let diff = out.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(diff <= 1e-5, "{crop:?} flip {flip}: max |diff| {diff:e}");
        worst = worst.max(diff);
    }
    eprintln!("max |calibra - torchvision| over 9 boxes: {worst:e}");
}
