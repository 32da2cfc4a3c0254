//! calibra-data: everything between a dataset on disk and the pixels an encoder sees.
//!
//! Owns: the common dataset types ([`Dataset`], [`Sample`], [`Target`], [`Metadata`]) and the one way
//! to read rows' targets ([`RowTargets`]); the dataset
//! SPEC strings ([`DatasetSpec`]); readers for ISIC 2019, APTOS 2019, CheXpert, MIMIC-CXR (plain or
//! gzipped CSV), MedMNIST `.npz`, ImageFolder and a generic CSV; the synthetic suites
//! ([`synth`]); seeded stratified splits and nested label fractions keyed by sample id ([`split`]);
//! the five acquisition perturbations of the protocol ([`mod@perturb`]); and preprocessing (decode with
//! the EXIF orientation applied, grayscale → 3 channels, resize ([`resample`] for bilinear), centre
//! crop, normalise from a Hugging Face
//! `preprocessor_config.json`) with rayon-parallel decoding ([`preprocess`]).
//!
//! Also owns looking at a dataset as a person would: its inspection report ([`inspect`]: counts per
//! split and class, label fractions, metadata coverage, problems) and a gallery of its perturbed
//! images ([`perturb_gallery`]).
//!
//! Must not depend on: burn or any model code, nor on the evaluator crates (metrics, calibrate, crs):
//! it produces samples and pixels, it scores nothing.
//!
//! # Dataset SPEC
//!
//! A dataset is named by one string `FORMAT:LOCATION[?key=value&key=value...]`:
//!
//! | spec | what it reads |
//! |---|---|
//! | `csv:/d/manifest.csv` | generic CSV: `path` and `label` (class name or index) or `label_<name>` columns (1/0/blank/−1), optional `id`, `split`, `age`, `sex`, `quality`, `site`, any other column kept as metadata. Options: `task=multiclass\|ordinal\|multilabel`, `classes=a,b,c`, `images=DIR` (default: the CSV's folder), `policy=` (see CheXpert) |
//! | `imagefolder:/d` | `d/<class>/<image>`; or `d/{train,val,test}/<class>/<image>` with official splits |
//! | `isic2019:/d` | `ISIC_2019_Training_GroundTruth.csv` (one-hot MEL…UNK), optional `ISIC_2019_Training_Metadata.csv`, images `ISIC_2019_Training_Input/<image>.jpg` (or `images=DIR`) |
//! | `aptos2019:/d` | `train.csv` (`id_code,diagnosis`), images `train_images/<id_code>.png` |
//! | `chexpert:/d` or `chexpert:/d/train.csv` | CheXpert CSV(s) (`Path`, `Sex`, `Age`, `Frontal/Lateral`, `AP/PA`, 14 observations 1/0/−1/blank); `valid.csv` beside `train.csv` becomes the official test split. Options: `policy=ignore\|zeros\|ones` (uncertain −1; default `ignore` = missing), `blank=zeros\|ignore` (default `zeros`), `root=DIR` (folder the `Path` column is relative to; default: the parent of the CSV's folder) |
//! | `mimic-cxr:/d` | `mimic-cxr-2.0.0-chexpert.csv[.gz]` joined by `study_id` to `mimic-cxr-2.0.0-split.csv[.gz]` (`dicom_id,study_id,subject_id,split`); images `files/p<2>/p<subject>/s<study>/<dicom>.jpg`; age/sex from MIMIC-IV `patients.csv[.gz]` or `hosp/patients.csv[.gz]` in the folder when present (`gender`, `anchor_age`). Options as CheXpert, plus `labels=FILE`, `split=FILE`, `images=DIR`, `patients=FILE` |
//! | `medmnist:/d/chestmnist.npz` | MedMNIST `.npz` (`{train,val,test}_{images,labels}`, 28 to 224 px, gray or RGB). Task from the file name (`chestmnist` multilabel, `retinamnist` ordinal, else multiclass) or `task=` |
//! | `synth:derm`, `synth:fundus`, `synth:chest`, `synth:chest-site-b` | synthetic suites. Options: `n=600`, `seed=0`, `size=64` |
//!
//! A bare existing path (no `FORMAT:`) is accepted: its format is detected ([`detect`]: the ISIC 2019
//! ground-truth CSV, APTOS `train.csv`, CheXpert, MIMIC-CXR, a MedMNIST `.npz` or an ImageFolder), what
//! was detected is printed on stderr, and an ambiguous path is an error listing the candidates.
#![forbid(unsafe_code)]

pub mod dataset;
pub mod detect;
pub mod error;
pub mod export_imagefolder;
pub mod filters;
pub mod hashing;
pub mod image_source;
pub mod inspect;
pub mod label_space;
pub mod metadata;
pub mod open_clip_preprocess;
pub mod perturb;
pub mod perturb_gallery;
pub mod pixels;
pub mod preprocess;
pub mod readers;
pub mod resample;
pub mod rng;
pub mod row_targets;
pub mod spec;
pub mod split;
pub mod synth;
pub mod timm_preprocess;

pub use dataset::{Dataset, LabelSpace, Metadata, Sample, Sex, SkippedSample, Split, Target, TaskKind};
pub use detect::{Detected, detect};
pub use error::DataError;
pub use image_source::{ImageArray, ImageSource};
pub use perturb::{Perturbation, Severity, perturb, perturbation_seed};
pub use pixels::ImageU8;
pub use preprocess::{PreprocessConfig, Tensor3, decode_samples, preprocess_samples};
pub use readers::{
    BadImagePolicy, LoadOptions, UncertaintyPolicy, check_spec_options, load_dataset, synth_config,
};
pub use row_targets::RowTargets;
pub use spec::{DatasetFormat, DatasetSpec};
pub use split::{PROTOCOL_FRACTIONS, SplitAssignment, SplitConfig, label_fraction, split_dataset};
pub use synth::{SynthConfig, SynthImageRef, SynthSuite, synth_dataset};
