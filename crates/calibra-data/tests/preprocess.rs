//! Preprocessing: Hugging Face config parsing, resize/crop geometry, normalisation, gray → RGB.

use calibra_data::preprocess::{PreprocessConfig, ResizeTarget, preprocess_samples};
use calibra_data::{BadImagePolicy, ImageU8, SynthConfig, SynthSuite, synth_dataset};

const CLIP_CONFIG: &str = r#"{
  "crop_size": {"height": 224, "width": 224},
  "do_center_crop": true, "do_convert_rgb": true, "do_normalize": true, "do_rescale": true, "do_resize": true,
  "image_mean": [0.48145466, 0.4578275, 0.40821073],
  "image_std": [0.26862954, 0.26130258, 0.27577711],
  "resample": 3, "rescale_factor": 0.00392156862745098,
  "size": {"shortest_edge": 224}
}"#;

#[test]
fn hf_configs_parse() {
    let c = PreprocessConfig::from_hf_json(CLIP_CONFIG).unwrap();
    assert_eq!(c.resize, Some(ResizeTarget::ShortestEdge(224)));
    assert_eq!(c.center_crop, Some((224, 224)));
    assert!((c.mean[0] - 0.481_454_66).abs() < 1e-7);
    let vit = PreprocessConfig::from_hf_json(r#"{"do_normalize": true, "do_resize": true, "image_mean": [0.5,0.5,0.5], "image_std": [0.5,0.5,0.5], "resample": 2, "size": {"height": 32, "width": 48}}"#).unwrap();
    assert_eq!(vit.resize, Some(ResizeTarget::Exact { height: 32, width: 48 }));
    assert_eq!(vit.center_crop, None);
    let old = PreprocessConfig::from_hf_json(r#"{"size": 224, "crop_size": 224}"#).unwrap();
    assert_eq!(old.resize, Some(ResizeTarget::ShortestEdge(224)));
    assert_eq!(old.center_crop, Some((224, 224)));
    for (bad, key) in [
        (r#"{"size": {"foo": 1}}"#, "size"),
        (r#"{"image_std": [1, 0, 1]}"#, "image_std"),
        (r#"{"resample": 9}"#, "resample"),
        ("[", "JSON"),
    ] {
        let e = PreprocessConfig::from_hf_json(bad).unwrap_err();
        assert!(e.contains(key), "{bad}: {e}");
    }
}

#[test]
fn a_flat_image_normalises_exactly_and_gray_becomes_three_channels() {
    let c = PreprocessConfig::from_hf_json(CLIP_CONFIG).unwrap();
    // A constant image stays constant under any resize filter (weights sum to 1), so every output
    // value is (v / 255 − mean_c) / std_c exactly (up to f32 rounding).
    let gray = ImageU8::new(300, 250, 1, vec![200; 300 * 250]).unwrap();
    let t = c.apply(&gray);
    assert_eq!((t.channels, t.height, t.width), (3, 224, 224));
    for ch in 0..3 {
        let want = (200.0 / 255.0 - c.mean[ch]) / c.std[ch];
        let plane = &t.data[ch * 224 * 224..(ch + 1) * 224 * 224];
        assert!(plane.iter().all(|v| (v - want).abs() < 1e-5), "channel {ch}");
    }
}

#[test]
fn shortest_edge_keeps_aspect_and_crop_is_centred() {
    // 20 × 10 image: left half 0, right half 255. Shortest edge 10 → unchanged size; crop 10 × 10 at
    // offset (20 − 10) / 2 = 5 → columns 5..15: five dark then five bright columns.
    let mut data = vec![0u8; 20 * 10];
    for y in 0..10 {
        for x in 10..20 {
            data[y * 20 + x] = 255;
        }
    }
    let img = ImageU8::new(20, 10, 1, data).unwrap();
    let c = PreprocessConfig::from_hf_json(
        r#"{"size": {"shortest_edge": 10}, "crop_size": {"height": 10, "width": 10}, "do_normalize": false}"#,
    )
    .unwrap();
    let t = c.apply(&img);
    assert_eq!((t.height, t.width), (10, 10));
    let row: Vec<f32> = t.data[..10].to_vec();
    assert_eq!(row, vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
}

#[test]
fn parallel_preprocessing_is_ordered_and_thread_independent() {
    let ds = synth_dataset(&SynthConfig { suite: SynthSuite::Derm, n: 6, seed: 0, size: 32 }).unwrap();
    let c = PreprocessConfig::from_hf_json(r#"{"size": {"height": 40, "width": 40}}"#).unwrap();
    let idx = [5, 0, 3];
    let run = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| preprocess_samples(&ds, &idx, &c, BadImagePolicy::Fail).unwrap())
    };
    let (one, three) = (run(1), run(3));
    assert_eq!(one.items.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![5, 0, 3]);
    assert_eq!(one.items, three.items);
}
