//! The `prior` baseline executor through the real grid loop and store, checked by invariants that hold
//! exactly by construction of the model (see `calibra_run::baseline`).
use calibra_crs::{Condition, RunRecordSet};
use calibra_data::{DatasetSpec, LoadOptions, SplitConfig, Target};
use calibra_run::baseline::BaselineExecutor;
use calibra_run::slot_outputs::record_metrics;
use calibra_run::store::{RunStore, StoreOptions};
use calibra_run::{NoProgress, Recipe, ValidationOptions, run_grid};

const RECIPE: &str = r#"seeds = [3]
label_fractions = [0.25, 1.0]
calibrators = ["none", "temperature"]
encoders = [{ name = "none", source = "hf:calibra/none" }]
datasets = [{ spec = "synth:derm?n=600" }]

[perturbations]
names = ["contrast"]
severities = [2]

[regimes.frozen]
probes = ["prior"]
"#;

#[test]
fn the_prior_predicts_smoothed_training_frequencies_for_every_row() {
    let recipe = Recipe::parse(RECIPE, "b.toml", ValidationOptions { check_paths: false }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = RunStore::open(dir.path(), StoreOptions::default()).unwrap();
    let s = run_grid(&recipe, &mut store, &BaselineExecutor::default(), None, true, &mut NoProgress).unwrap();
    assert_eq!((s.completed, s.records_written), (2, 8));
    drop(store);

    // The expected prior, computed here from the dataset, split and fraction independently of the executor.
    let dataset =
        calibra_data::load_dataset(&DatasetSpec::parse("synth:derm?n=600").unwrap(), &LoadOptions::default())
            .unwrap();
    let split = calibra_data::split_dataset(&dataset, &SplitConfig::default()).unwrap();
    let k = dataset.labels.len();
    let set = RunRecordSet::from_paths(&[dir.path().join("runs.jsonl")]).unwrap();
    for fraction in [0.25, 1.0] {
        let train = calibra_data::label_fraction(&dataset, &split.train, fraction, 3).unwrap();
        let mut counts = vec![0.0; k];
        for &i in &train {
            let Target::Class(c) = dataset.samples[i].target else { panic!("derm is single-label") };
            counts[c] += 1.0;
        }
        let expected: Vec<f64> = counts.iter().map(|c| (c + 1.0) / (train.len() as f64 + k as f64)).collect();
        let of = |condition: &Condition, calibrator: &str| {
            set.records()
                .iter()
                .find(|r| {
                    r.record.label_fraction == fraction
                        && &r.record.condition == condition
                        && r.record.calibrator == calibrator
                })
                .unwrap()
                .record
                .clone()
        };
        let clean = of(&Condition::Clean, "none");
        let perturbed = of(&Condition::Perturbation { perturbation: "contrast".into(), severity: 2 }, "none");
        let file = |r: &calibra_crs::RunRecord| {
            calibra_predictions::read_predictions(&dir.path().join(&r.paths["predictions"])).unwrap()
        };
        let p = file(&clean);
        assert_eq!(p.len(), split.test.len());
        let probs = p.probabilities();
        for row in probs.chunks(k) {
            for (got, want) in row.iter().zip(&expected) {
                assert!((got - want).abs() < 1e-12, "{got} vs {want}");
            }
        }
        // All scores tie: AUROC is exactly 0.5 wherever defined.
        assert_eq!(clean.metrics["macro_auroc"], 0.5);
        // The prior ignores pixels: the perturbed split gets the clean predictions and metrics.
        assert_eq!(file(&perturbed).probabilities(), probs);
        assert_eq!(perturbed.metrics, clean.metrics);
        // Record metrics are the metric set of the predictions file it points to.
        assert_eq!(record_metrics(&p).unwrap(), clean.metrics);
        let calibrated = of(&Condition::Clean, "temperature");
        assert_eq!(record_metrics(&file(&calibrated)).unwrap(), calibrated.metrics);
    }
}
