//! Perturbations: parity with Pillow/scipy golden references (scripts/golden/perturb.py),
//! determinism across runs and thread counts, and severity monotonicity.

use calibra_data::perturb::{fov_crop, gaussian_blur, jpeg_roundtrip, reduce_contrast};
use calibra_data::{
    ImageU8, Perturbation, Severity, SynthConfig, SynthSuite, perturb, perturbation_seed, synth_dataset,
};
use rayon::prelude::*;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/perturb")
}

fn golden() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(golden_dir().join("perturb.json")).unwrap()).unwrap()
}

fn open(name: &str) -> ImageU8 {
    ImageU8::open(&golden_dir().join(name)).unwrap()
}

fn max_abs_diff(a: &ImageU8, b: &ImageU8) -> i32 {
    assert_eq!((a.width, a.height, a.channels), (b.width, b.height, b.channels));
    a.data.iter().zip(&b.data).map(|(&x, &y)| (i32::from(x) - i32::from(y)).abs()).max().unwrap()
}

fn mean_abs_diff(a: &ImageU8, b: &ImageU8) -> f64 {
    a.data.iter().zip(&b.data).map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs()).sum::<f64>()
        / a.data.len() as f64
}

#[test]
fn jpeg_error_is_within_five_percent_of_pillow_at_the_same_quality() {
    let g = golden();
    for entry in g["images"].as_array().unwrap() {
        let name = entry["name"].as_str().unwrap();
        let image = open(&format!("inputs/{name}.png"));
        for q in entry["jpeg"].as_array().unwrap() {
            let quality = q["quality"].as_u64().unwrap() as u8;
            let pillow = q["rmse"].as_f64().unwrap();
            let ours = image.rmse(&jpeg_roundtrip(&image, quality).unwrap()).unwrap();
            let rel = (ours - pillow).abs() / pillow;
            println!(
                "jpeg {name} q{quality}: ours {ours:.3} Pillow {pillow:.3} ({:+.2} %)",
                (ours - pillow) / pillow * 100.0
            );
            assert!(
                rel < 0.05,
                "{name} q{quality}: ours {ours:.3} vs Pillow {pillow:.3} ({:.1} %)",
                rel * 100.0
            );
        }
    }
}

#[test]
fn blur_matches_scipy_gaussian_filter_within_one_level() {
    let input = open("inputs/small_rgb_32.png");
    for sigma in golden()["blur_sigmas"].as_array().unwrap() {
        let s = sigma.as_f64().unwrap();
        let reference = open(&format!("blur_small_rgb_32_{}.png", fmt(s)));
        let d = max_abs_diff(&gaussian_blur(&input, s), &reference);
        println!("blur sigma {s}: max |diff| {d}");
        assert!(d <= 1, "sigma {s}: max difference {d}");
    }
}

#[test]
fn contrast_matches_the_numpy_formula_within_one_level() {
    let input = open("inputs/small_rgb_32.png");
    for c in golden()["contrast_factors"].as_array().unwrap() {
        let c = c.as_f64().unwrap();
        let reference = open(&format!("contrast_small_rgb_32_{}.png", fmt(c)));
        let d = max_abs_diff(&reduce_contrast(&input, c), &reference);
        println!("contrast {c}: max |diff| {d}");
        assert!(d <= 1, "factor {c}: max difference {d}");
    }
}

#[test]
fn fov_crop_matches_pillow_bilinear_on_average() {
    let input = open("inputs/small_rgb_32.png");
    for f in golden()["fov_fractions"].as_array().unwrap() {
        let f = f.as_f64().unwrap();
        let reference = open(&format!("fov_small_rgb_32_{}.png", fmt(f)));
        let d = mean_abs_diff(&fov_crop(&input, f), &reference);
        println!("fov {f}: mean |diff| {d:.4}, max {}", max_abs_diff(&fov_crop(&input, f), &reference));
        assert!(d < 1.0, "fraction {f}: mean difference {d}");
    }
}

/// Python's `str(float)` for the file names (0.6, 1.5, 3.0, 0.85...).
fn fmt(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

fn synth_images(suite: SynthSuite, n: usize) -> Vec<(String, ImageU8)> {
    let ds = synth_dataset(&SynthConfig { suite, n, seed: 3, size: 48 }).unwrap();
    ds.samples.iter().map(|s| (s.id.clone(), s.image.load().unwrap())).collect()
}

fn perturb_all(images: &[(String, ImageU8)], threads: usize) -> Vec<ImageU8> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let jobs: Vec<(usize, Perturbation, Severity)> = (0..images.len())
        .flat_map(|i| Perturbation::ALL.into_iter().flat_map(move |p| Severity::ALL.map(|s| (i, p, s))))
        .collect();
    pool.install(|| {
        jobs.par_iter().map(|&(i, p, s)| perturb(&images[i].1, &images[i].0, p, s).unwrap()).collect()
    })
}

#[test]
fn perturbations_are_identical_across_runs_and_thread_counts() {
    let images = synth_images(SynthSuite::Derm, 3);
    let one = perturb_all(&images, 1);
    let four = perturb_all(&images, 4);
    let again = perturb_all(&images, 3);
    assert_eq!(one, four);
    assert_eq!(one, again);
}

#[test]
fn the_noise_stream_depends_on_image_perturbation_and_severity_only() {
    let (id, image) = synth_images(SynthSuite::Fundus, 1).remove(0);
    let s2 = Severity::new(2).unwrap();
    let a = perturb(&image, &id, Perturbation::RicianNoise, s2).unwrap();
    let b = perturb(&image, "another-id", Perturbation::RicianNoise, s2).unwrap();
    assert_eq!(a, perturb(&image, &id, Perturbation::RicianNoise, s2).unwrap());
    assert_ne!(a, b, "a different image id must draw different noise");
    assert_ne!(
        perturbation_seed(&id, Perturbation::RicianNoise, s2),
        perturbation_seed(&id, Perturbation::RicianNoise, Severity::new(3).unwrap())
    );
    assert_ne!(
        perturbation_seed(&id, Perturbation::RicianNoise, s2),
        perturbation_seed(&id, Perturbation::Jpeg, s2)
    );
    assert!(Severity::new(0).is_err() && Severity::new(4).is_err());
}

#[test]
fn distance_to_the_clean_image_grows_with_severity() {
    for suite in [SynthSuite::Derm, SynthSuite::Fundus, SynthSuite::Chest] {
        let images = synth_images(suite, 4);
        for p in Perturbation::ALL {
            let mean: Vec<f64> = Severity::ALL
                .iter()
                .map(|&s| {
                    images
                        .iter()
                        .map(|(id, img)| img.rmse(&perturb(img, id, p, s).unwrap()).unwrap())
                        .sum::<f64>()
                        / images.len() as f64
                })
                .collect();
            assert!(mean[0] > 0.0 && mean[0] < mean[1] && mean[1] < mean[2], "{suite:?} {p:?}: {mean:?}");
        }
    }
}

#[test]
fn grayscale_stays_grayscale_and_shapes_are_kept() {
    let (id, image) = synth_images(SynthSuite::Chest, 1).remove(0);
    assert_eq!(image.channels, 1);
    for p in Perturbation::ALL {
        let out = perturb(&image, &id, p, Severity::new(3).unwrap()).unwrap();
        assert_eq!((out.width, out.height, out.channels), (image.width, image.height, 1), "{p:?}");
    }
    let odd = open("inputs/scene_rgb_50x38.png");
    for p in Perturbation::ALL {
        let out = perturb(&odd, "odd", p, Severity::new(1).unwrap()).unwrap();
        assert_eq!((out.width, out.height, out.channels), (50, 38, 3), "{p:?}");
    }
}

#[test]
fn contrast_keeps_the_channel_means_up_to_rounding() {
    // Exact identity: mean(m + c (x − m)) = m; rounding moves each value by at most 0.5.
    let image = open("inputs/scene_rgb_64.png");
    let out = reduce_contrast(&image, 0.3);
    for c in 0..3 {
        let mean =
            |img: &ImageU8| img.data.iter().skip(c).step_by(3).map(|&v| f64::from(v)).sum::<f64>() / 4096.0;
        assert!((mean(&image) - mean(&out)).abs() <= 0.5);
    }
}

#[test]
fn rician_noise_matches_the_independent_python_reference_byte_for_byte() {
    // scripts/golden/perturb.py recomputes definition v2 in pure Python (SHA-256 seed, ChaCha20,
    // both outputs of one Box–Muller transform with libm log/cos/sin): the fast path must give
    // exactly those bytes.
    let g = golden();
    let cases = g["rician"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for case in cases {
        let input = open(&format!("inputs/{}.png", case["input"].as_str().unwrap()));
        let id = case["id"].as_str().unwrap();
        let severity = Severity::new(case["severity"].as_u64().unwrap() as u8).unwrap();
        let expected = open(case["file"].as_str().unwrap());
        let ours = perturb(&input, id, Perturbation::RicianNoise, severity).unwrap();
        assert_eq!(ours, expected, "{id}");
        assert_ne!(ours, input, "{id}: the noise changed something");
        // The direct (slow, libm) computation agrees as well.
        let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::from_seed(perturbation_seed(
            id,
            Perturbation::RicianNoise,
            severity,
        ));
        let sigma = Perturbation::RicianNoise.ladder()[severity.level() as usize - 1];
        assert_eq!(calibra_data::perturb::rician_noise_reference(&input, sigma, &mut rng), expected, "{id}");
    }
}
