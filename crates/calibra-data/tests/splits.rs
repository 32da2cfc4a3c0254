//! Splits and label fractions: stratification, nesting, ≥ 1 example per class, stability under
//! manifest shuffling, official splits.

use calibra_data::{
    Dataset, ImageSource, LabelSpace, Metadata, PROTOCOL_FRACTIONS, Sample, Split, SplitConfig, SynthConfig,
    SynthSuite, Target, TaskKind, label_fraction, split_dataset, synth_dataset,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn dataset_from(classes: &[usize], k: usize) -> Dataset {
    let samples = classes
        .iter()
        .enumerate()
        .map(|(i, &c)| Sample {
            id: format!("sample-{i}"),
            image: ImageSource::File(format!("/nonexistent/{i}.png").into()),
            target: Target::Class(c),
            metadata: Metadata::default(),
            official_split: None,
        })
        .collect();
    Dataset {
        name: "test".into(),
        labels: LabelSpace { kind: TaskKind::Multiclass, names: (0..k).map(|c| c.to_string()).collect() },
        samples,
        skipped: vec![],
        on_bad_image: calibra_data::BadImagePolicy::Fail,
    }
}

fn ids(ds: &Dataset, idx: &[usize]) -> BTreeSet<String> {
    idx.iter().map(|&i| ds.samples[i].id.clone()).collect()
}

/// Deterministic Fisher–Yates with a small LCG (the shuffle only needs to differ from identity).
fn shuffled(ds: &Dataset, seed: u64) -> Dataset {
    let mut out = ds.clone();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    for i in (1..out.samples.len()).rev() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let j = (state >> 33) as usize % (i + 1);
        out.samples.swap(i, j);
    }
    out
}

#[test]
fn splits_partition_the_dataset_and_are_stratified() {
    let classes: Vec<usize> = (0..1000)
        .map(|i| {
            if i % 10 == 0 {
                2
            } else if i % 3 == 0 {
                1
            } else {
                0
            }
        })
        .collect();
    let ds = dataset_from(&classes, 3);
    let s = split_dataset(&ds, &SplitConfig::default()).unwrap();
    let mut all: Vec<usize> = s.train.iter().chain(&s.calibration).chain(&s.test).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..1000).collect::<Vec<_>>(), "a partition");
    let total = ds.class_counts(&(0..1000).collect::<Vec<_>>());
    for (split, share) in [(Split::Train, 0.70), (Split::Calibration, 0.15), (Split::Test, 0.15)] {
        let counts = ds.class_counts(s.get(split));
        for c in 0..3 {
            // Per-stratum rounding: each class's share is within one sample of the target.
            let want = share * total[c] as f64;
            assert!((counts[c] as f64 - want).abs() <= 1.0, "{split:?} class {c}: {} vs {want}", counts[c]);
        }
    }
}

#[test]
fn different_seeds_give_different_splits() {
    let ds = dataset_from(&vec![0; 200], 1);
    let a = split_dataset(&ds, &SplitConfig::default()).unwrap();
    let b = split_dataset(&ds, &SplitConfig { seed: 1, ..SplitConfig::default() }).unwrap();
    assert_eq!(a.test.len(), b.test.len());
    assert_ne!(a.test, b.test);
}

#[test]
fn official_splits_are_kept_and_missing_ones_carved_from_train() {
    let mut ds = dataset_from(&(0..300).map(|i| i % 2).collect::<Vec<_>>(), 2);
    for (i, s) in ds.samples.iter_mut().enumerate() {
        s.official_split = Some(if i < 240 { Split::Train } else { Split::Test });
    }
    let s = split_dataset(&ds, &SplitConfig::default()).unwrap();
    assert_eq!(s.test, (240..300).collect::<Vec<_>>());
    assert!(s.train.iter().chain(&s.calibration).all(|&i| i < 240));
    // Train keeps 0.70 / (0.70 + 0.15) of the official train samples: 240 · 0.70/0.85 ≈ 197.6 per-class rounded.
    assert_eq!(s.train.len() + s.calibration.len(), 240);
    assert!((s.train.len() as f64 - 240.0 * 0.70 / 0.85).abs() <= 2.0, "{}", s.train.len());
    let ignore = split_dataset(&ds, &SplitConfig { use_official: false, ..SplitConfig::default() }).unwrap();
    assert_ne!(ignore.test, s.test);
}

#[test]
fn protocol_fractions_are_nested_and_keep_every_class() {
    let classes: Vec<usize> = (0..2000).map(|i| if i % 97 == 0 { 3 } else { i % 3 }).collect();
    let ds = dataset_from(&classes, 4);
    let train = split_dataset(&ds, &SplitConfig::default()).unwrap().train;
    let mut previous: Option<BTreeSet<usize>> = None;
    for rho in PROTOCOL_FRACTIONS {
        let subset = label_fraction(&ds, &train, rho, 7).unwrap();
        assert!(ds.class_counts(&subset).iter().all(|&c| c >= 1), "rho {rho}: a class is empty");
        assert!(subset.iter().all(|i| train.contains(i)));
        let set: BTreeSet<usize> = subset.iter().copied().collect();
        if let Some(p) = &previous {
            assert!(p.is_subset(&set), "rho {rho} does not contain the smaller fraction");
        }
        previous = Some(set);
    }
    assert_eq!(label_fraction(&ds, &train, 1.0, 7).unwrap(), train);
    assert!(label_fraction(&ds, &train, 0.0, 7).is_err());
    assert!(label_fraction(&ds, &train, 1.5, 7).is_err());
}

#[test]
fn multilabel_fractions_keep_a_positive_and_a_negative_per_label() {
    let ds = synth_dataset(&SynthConfig { suite: SynthSuite::Chest, n: 400, seed: 0, size: 32 }).unwrap();
    let train = split_dataset(&ds, &SplitConfig::default()).unwrap().train;
    let positives_in_train = ds.class_counts(&train);
    let mut previous = BTreeSet::new();
    for rho in PROTOCOL_FRACTIONS {
        let subset = label_fraction(&ds, &train, rho, 0).unwrap();
        let pos = ds.class_counts(&subset);
        for j in 0..14 {
            if positives_in_train[j] > 0 {
                assert!(pos[j] >= 1, "rho {rho}: label {j} has no positive");
            }
            let negatives = subset
                .iter()
                .filter(|&&i| matches!(&ds.samples[i].target, Target::Labels(v) if v[j] == Some(false)))
                .count();
            assert!(negatives >= 1, "rho {rho}: label {j} has no negative");
        }
        let set: BTreeSet<usize> = subset.into_iter().collect();
        assert!(previous.is_subset(&set));
        previous = set;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn splits_and_fractions_do_not_depend_on_manifest_order(
        classes in proptest::collection::vec(0usize..4, 20..200),
        seed in 0u64..1000,
        shuffle in 0u64..1000,
    ) {
        let ds = dataset_from(&classes, 4);
        let other = shuffled(&ds, shuffle);
        let config = SplitConfig { seed, ..SplitConfig::default() };
        let (a, b) = (split_dataset(&ds, &config).unwrap(), split_dataset(&other, &config).unwrap());
        for split in Split::ALL {
            prop_assert_eq!(ids(&ds, a.get(split)), ids(&other, b.get(split)));
        }
        for rho in [0.05, 0.25] {
            let fa = label_fraction(&ds, &a.train, rho, seed).unwrap();
            let fb = label_fraction(&other, &b.train, rho, seed).unwrap();
            prop_assert_eq!(ids(&ds, &fa), ids(&other, &fb));
        }
    }
}
