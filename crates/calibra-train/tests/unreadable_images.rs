//! A training image that exists but cannot be decoded, met mid-epoch (issue 16, "Bad input and
//! faults"): under the dataset's `on_bad_image=skip` it is left out of its batches, counted once and
//! reported, in memory and streamed alike (same bits), and across a resume; under `fail` (the default)
//! the fit stops with an error naming the file.
//!
//! Its own test binary: training re-seeds burn's process-wide random stream, so the tests here take
//! turns ([`SERIAL`]) rather than run at once.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use burn::module::Module;
use burn::tensor::Device;
use calibra_data::export_imagefolder::{ExportFormat, export_imagefolder};
use calibra_data::{BadImagePolicy, Dataset, DatasetSpec, ImageSource, LoadOptions, load_dataset};
use calibra_models::Encoder;
use calibra_train::augment::Augment;
use calibra_train::build_loss;
use calibra_train::features::preprocess_for;
use calibra_train::fine_tune::{Adaptation, EncoderClassifier, train_set_within};
use calibra_train::train_images::UnreadableImage;
use calibra_train::trainer::{StepReport, TrainConfig, TrainOutcome, TrainSet, train};

#[path = "support/generalist_lora.rs"]
mod generalist_lora;
use generalist_lora::{checkpoint, lora_classifier, weights};

/// Held by every test that trains or builds a model: burn's random stream is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Twelve training rows of a PNG ImageFolder written from `synth:derm`; row `bad` is overwritten with
/// bytes that are not an image. Returns the folder and the damaged file.
fn damaged_folder(dir: &Path, bad: usize) -> (PathBuf, PathBuf) {
    let synth =
        load_dataset(&DatasetSpec::parse("synth:derm?n=12&size=40").unwrap(), &LoadOptions::default())
            .unwrap();
    let root = dir.join("derm");
    export_imagefolder(&synth, &root, ExportFormat::Png, BadImagePolicy::Fail, &|_| {}).unwrap();
    let folder = load(&root, "");
    let ImageSource::File(file) = &folder.samples[bad].image else { panic!("a file-backed sample") };
    std::fs::write(file, b"not a PNG: the write was cut short").unwrap();
    (root, file.clone())
}

fn load(root: &Path, options: &str) -> Dataset {
    let spec = format!("imagefolder:{}{options}", root.display());
    load_dataset(&DatasetSpec::parse(&spec).unwrap(), &LoadOptions::default()).unwrap()
}

fn fit(data: &TrainSet, k: usize, checkpoint_dir: Option<&Path>) -> TrainOutcome<EncoderClassifier> {
    fit_reporting(data, k, checkpoint_dir, &mut |_| {})
}

fn fit_reporting(
    data: &TrainSet,
    k: usize,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> TrainOutcome<EncoderClassifier> {
    let device = Device::flex().autodiff();
    let model = lora_classifier(k, &device);
    let config = TrainConfig {
        epochs: 2,
        batch_size: 4,
        lr: 1e-3,
        augment: Augment::CropFlip,
        checkpoint_every: 1,
        ..TrainConfig::default()
    };
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    train(model, data, loss.as_ref(), &config, &device, checkpoint_dir, progress).unwrap()
}

fn training_sets(dataset: &Dataset) -> (TrainSet, TrainSet) {
    let preprocess = preprocess_for(&checkpoint()).unwrap();
    let rows: Vec<usize> = (0..dataset.samples.len()).collect();
    let held = train_set_within(dataset, &rows, &preprocess, usize::MAX).unwrap();
    let streamed = train_set_within(dataset, &rows, &preprocess, 0).unwrap();
    (held, streamed)
}

#[test]
fn under_skip_an_unreadable_image_is_left_out_counted_once_and_trains_the_same_held_or_streamed() {
    let _turn = serial();
    let dir = tempfile::tempdir().unwrap();
    let (root, file) = damaged_folder(dir.path(), 5);
    let dataset = load(&root, "?on_bad_image=skip");
    assert_eq!(dataset.on_bad_image, BadImagePolicy::Skip);
    let k = dataset.labels.len();
    let (held, streamed) = training_sets(&dataset);

    let a = fit(&held, k, None);
    let b = fit(&streamed, k, None);
    assert_eq!(a.losses.len(), 6, "12 rows in batches of 4, 2 epochs: no step passed over");
    assert!(a.losses.iter().all(|l| l.is_finite()), "{:?}", a.losses);
    assert_eq!(a.losses, b.losses);
    assert!(weights(&a.model.valid()) == weights(&b.model.valid()), "held and streamed must train alike");
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    for outcome in [&a, &b] {
        let [UnreadableImage { row, sample, reason }] = outcome.unreadable.as_slice() else {
            panic!("one unreadable image, met in both epochs and listed once: {:?}", outcome.unreadable)
        };
        assert_eq!(*row, 5);
        assert!(sample.contains(&name), "{sample}");
        assert!(!reason.is_empty());
    }
    // The strict reader still refuses it, naming it.
    let err = held.pixels(&[4, 5]).unwrap_err().to_string();
    assert!(err.contains(&name), "{err}");
}

#[test]
fn under_fail_the_fit_stops_naming_the_file() {
    let _turn = serial();
    let dir = tempfile::tempdir().unwrap();
    let (root, file) = damaged_folder(dir.path(), 5);
    let dataset = load(&root, "");
    assert_eq!(dataset.on_bad_image, BadImagePolicy::Fail);
    let preprocess = preprocess_for(&checkpoint()).unwrap();
    let rows: Vec<usize> = (0..dataset.samples.len()).collect();
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    // Held in memory: every image is decoded up front, so the set is refused.
    let err = train_set_within(&dataset, &rows, &preprocess, usize::MAX).unwrap_err().to_string();
    assert!(err.contains(&name), "{err}");
    // Streamed: the step that needs the image stops the fit.
    let streamed = train_set_within(&dataset, &rows, &preprocess, 0).unwrap();
    let device = Device::flex().autodiff();
    let encoder = Encoder::load_dir(&checkpoint(), &device).unwrap();
    let dim = encoder.classification_dim();
    let (model, _) =
        EncoderClassifier::new(encoder, dim, dataset.labels.len(), &Adaptation::Head, 5, &device).unwrap();
    let config = TrainConfig { epochs: 1, batch_size: 4, checkpoint_every: 0, ..TrainConfig::default() };
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    let err = train(model, &streamed, loss.as_ref(), &config, &device, None, &mut |_| {}).err().unwrap();
    assert!(err.to_string().contains(&name), "{err}");
}

#[test]
fn a_first_image_that_cannot_be_read_is_skipped_and_a_resume_still_reports_it() {
    let _turn = serial();
    let dir = tempfile::tempdir().unwrap();
    let (root, file) = damaged_folder(dir.path(), 0);
    let dataset = load(&root, "?on_bad_image=skip");
    let (_, streamed) = training_sets(&dataset);
    assert_eq!(streamed.image_shape[0], 3, "the shape comes from the first readable image");
    let checkpoints = dir.path().join("train");
    let done = fit(&streamed, dataset.labels.len(), Some(&checkpoints));
    assert_eq!(done.unreadable.len(), 1);
    // Started again on the finished checkpoint: no step runs, and the list comes from the checkpoint.
    let again = fit(&streamed, dataset.labels.len(), Some(&checkpoints));
    assert_eq!(again.resumed_from, Some(6));
    assert_eq!(again.unreadable, done.unreadable);
    assert!(again.unreadable[0].sample.contains(&*file.file_name().unwrap().to_string_lossy()));
}

/// Issue 16: a kill during a streamed epoch (here mid-epoch 1, with an unreadable image in the set)
/// resumes from the last checkpoint to the weights, losses and unreadable list of an uninterrupted run.
#[test]
fn a_kill_mid_streamed_epoch_resumes_to_the_uninterrupted_weights() {
    let _turn = serial();
    let dir = tempfile::tempdir().unwrap();
    let (root, _) = damaged_folder(dir.path(), 7);
    let dataset = load(&root, "?on_bad_image=skip");
    let k = dataset.labels.len();
    let (_, streamed) = training_sets(&dataset);
    let whole = fit(&streamed, k, None);

    let checkpoints = dir.path().join("train");
    let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fit_reporting(&streamed, k, Some(&checkpoints), &mut |r| {
            // Reported before step 2's checkpoint is written: the newest on disk is step 1's.
            if r.step == 2 {
                std::panic::resume_unwind(Box::new("simulated kill"));
            }
        })
    }));
    assert!(killed.is_err());
    let resumed = fit(&streamed, k, Some(&checkpoints));
    assert_eq!(resumed.resumed_from, Some(1));
    assert_eq!(resumed.losses, whole.losses);
    assert!(
        weights(&resumed.model.valid()) == weights(&whole.model.valid()),
        "resume must not change the weights"
    );
    assert_eq!(resumed.unreadable, whole.unreadable);
}
