//! The synthetic suites (`synth:` datasets): procedurally generated, deterministic from a seed, any
//! size from 28×28 up, no download. They exercise the three task kinds of the protocol and an
//! institutional shift; the generative rules are documented per suite (and in the crate README) so
//! that a result on them can be read for what it is: a test of the pipeline, not of medicine.
//!
//! Every sample `i` of suite `S` with seed `s` owns one random stream, ChaCha20 seeded with
//! SHA-256(`calibra-synth-v1`, S, s, i): the stream first draws the labels and metadata, then the
//! pixels. So a sample's image and labels do not depend on `n`, on the image size's draw order, on
//! other samples or on threads; the image is regenerated on demand by [`SynthImageRef::render`].

mod canvas;
pub mod chest;
pub mod derm;
mod draw;
pub mod fundus;
mod generate;
mod image_ref;
pub mod shapes;
mod suite;

pub use generate::{SynthConfig, synth_dataset};
pub use image_ref::SynthImageRef;
pub use suite::SynthSuite;
