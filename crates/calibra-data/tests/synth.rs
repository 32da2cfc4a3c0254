//! The synthetic suites: determinism, independence of sample images from `n`, label priors, and
//! the site-B shift.

use calibra_data::synth::{chest, derm, fundus};
use calibra_data::{
    DatasetSpec, LoadOptions, SynthConfig, SynthSuite, Target, TaskKind, load_dataset, synth_dataset,
};

fn config(suite: SynthSuite, n: usize, size: u32) -> SynthConfig {
    SynthConfig { suite, n, seed: 11, size }
}

#[test]
fn samples_are_deterministic_and_independent_of_n() {
    for suite in SynthSuite::ALL {
        let small = synth_dataset(&config(suite, 3, 32)).unwrap();
        let large = synth_dataset(&config(suite, 6, 32)).unwrap();
        for i in 0..3 {
            assert_eq!(small.samples[i].id, large.samples[i].id);
            assert_eq!(small.samples[i].target, large.samples[i].target);
            assert_eq!(small.samples[i].metadata, large.samples[i].metadata);
            let img = small.samples[i].image.load().unwrap();
            assert_eq!(img, large.samples[i].image.load().unwrap(), "{suite:?} {i}");
            assert_eq!(img.width, 32);
        }
        let other_seed = synth_dataset(&SynthConfig { seed: 12, ..config(suite, 3, 32) }).unwrap();
        assert_ne!(small.samples[0].image.load().unwrap(), other_seed.samples[0].image.load().unwrap());
    }
}

/// Observed class frequencies within 4 binomial standard errors of `prior · (1 − noise) + noise spread`.
fn check_prior(suite: SynthSuite, prior: &[f64], noise: f64) {
    let n = 4000;
    let ds = synth_dataset(&config(suite, n, 28)).unwrap();
    let counts = ds.class_counts(&(0..n).collect::<Vec<_>>());
    let k = prior.len() as f64;
    for (c, &p) in prior.iter().enumerate() {
        // Multiclass noise moves a label to one of the other k − 1 classes uniformly; for the ordinal
        // suite this is only an approximation, so the tolerance below is generous (4 SE + noise).
        let expected = p * (1.0 - noise) + (1.0 - p) * noise / (k - 1.0);
        let se = (expected * (1.0 - expected) / n as f64).sqrt();
        let observed = counts[c] as f64 / n as f64;
        assert!(
            (observed - expected).abs() < 4.0 * se + noise,
            "{suite:?} class {c}: {observed} vs {expected}"
        );
    }
}

#[test]
fn class_frequencies_follow_the_documented_priors() {
    check_prior(SynthSuite::Derm, &derm::CLASS_PRIOR, derm::LABEL_NOISE);
    check_prior(SynthSuite::Fundus, &fundus::GRADE_PRIOR, fundus::LABEL_NOISE);
}

#[test]
fn chest_no_finding_is_exclusive_and_site_b_is_shifted() {
    let a = synth_dataset(&config(SynthSuite::Chest, 300, 28)).unwrap();
    let b = synth_dataset(&config(SynthSuite::ChestSiteB, 300, 28)).unwrap();
    assert_eq!(a.labels.kind, TaskKind::Multilabel);
    assert_eq!(a.labels.names, chest::LABEL_NAMES.map(String::from).to_vec());
    for s in &a.samples {
        let Target::Labels(v) = &s.target else { panic!() };
        let any_pathology = v[1..13].contains(&Some(true));
        assert_eq!(v[0] == Some(true), !any_pathology, "{}", s.id);
        assert_eq!(s.metadata.site.as_deref(), Some("A"));
    }
    assert!(b.samples.iter().all(|s| s.metadata.site.as_deref() == Some("B")));
    let mean_age =
        |d: &calibra_data::Dataset| d.samples.iter().map(|s| s.metadata.age.unwrap()).sum::<f64>() / 300.0;
    assert!(mean_age(&b) > mean_age(&a) + 4.0, "site B is older");
    // The intensity curve x^0.7 · 0.9 + 0.05 lifts dark pixels: the darkest decile is brighter at B.
    let dark = |d: &calibra_data::Dataset| -> f64 {
        let mut v: Vec<u8> = d.samples[..20].iter().flat_map(|s| s.image.load().unwrap().data).collect();
        v.sort_unstable();
        f64::from(v[v.len() / 10])
    };
    assert!(dark(&b) > dark(&a) + 5.0, "{} vs {}", dark(&b), dark(&a));
}

#[test]
fn synth_specs_load_and_small_sizes_are_rejected() {
    let ds = load_dataset(
        &DatasetSpec::parse("synth:fundus?n=12&seed=2&size=28").unwrap(),
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(ds.len(), 12);
    assert_eq!(ds.labels.kind, TaskKind::Ordinal);
    assert!(
        ds.samples
            .iter()
            .all(|s| s.metadata.age.is_some() && s.metadata.sex.is_some() && s.metadata.quality.is_some())
    );
    assert!(synth_dataset(&SynthConfig { size: 27, ..config(SynthSuite::Derm, 2, 28) }).is_err());
    assert!(synth_dataset(&SynthConfig { n: 0, ..config(SynthSuite::Derm, 2, 28) }).is_err());
    let e = load_dataset(&DatasetSpec::parse("synth:brain").unwrap(), &LoadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("unknown synthetic suite `brain`"));
}

/// Mean |centre − border| intensity over the image: a crude lesion-contrast measure (the lesion sits
/// near the centre, the border is skin).
fn centre_contrast(img: &calibra_data::ImageU8) -> f64 {
    let (w, h, c) = (img.width as usize, img.height as usize, img.channels as usize);
    let mean = |x0: usize, x1: usize, y0: usize, y1: usize| -> f64 {
        let mut sum = 0.0;
        for y in y0..y1 {
            for x in x0..x1 {
                for ch in 0..c {
                    sum += f64::from(img.data[(y * w + x) * c + ch]);
                }
            }
        }
        sum / ((x1 - x0) * (y1 - y0) * c) as f64
    };
    let centre = mean(w * 3 / 8, w * 5 / 8, h * 3 / 8, h * 5 / 8);
    let border = mean(0, w, 0, h / 8);
    (border - centre).abs()
}

#[test]
fn derm_age_subgroup_has_lower_lesion_contrast_as_documented() {
    // Compared within each recorded class (age also shifts the class mix), pooled over classes that
    // have at least 5 samples on both sides of 60.
    let ds = synth_dataset(&config(SynthSuite::Derm, 300, 28)).unwrap();
    let mut groups: std::collections::BTreeMap<(usize, bool), Vec<f64>> = Default::default();
    for s in &ds.samples {
        let Target::Class(c) = s.target else { panic!() };
        groups
            .entry((c, s.metadata.age.unwrap() > 60.0))
            .or_default()
            .push(centre_contrast(&s.image.load().unwrap()));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mut compared = 0;
    let mut diff = 0.0;
    for c in 0..6 {
        if let (Some(old), Some(young)) = (groups.get(&(c, true)), groups.get(&(c, false)))
            && old.len() >= 5
            && young.len() >= 5
        {
            diff += mean(young) - mean(old);
            compared += 1;
        }
    }
    assert!(compared >= 2, "too few classes with both age groups");
    // Measured: ≈ 24 levels with the documented 0.7× contrast, ≈ 5.5 with the effect switched off (the
    // remainder comes from label noise and age-dependent mottling); 12 separates the two.
    assert!(diff / compared as f64 > 12.0, "mean within-class contrast gap {}", diff / compared as f64);
}
