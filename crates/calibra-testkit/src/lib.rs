//! Test support for calibra's crates, used only as a dev-dependency: the byte-mutation strategy every
//! reader's fuzz target starts from ([`byte_mutation`]), and the case budget all fuzz targets share
//! ([`fuzz_config`]), so that one environment variable lengthens every fuzz run.
//!
//! It depends on proptest only, and nothing of calibra: a production crate must never depend on it.

#![forbid(unsafe_code)]

mod byte_mutation;
mod fuzz_budget;

pub use byte_mutation::{ByteEdit, apply_edits, byte_edit};
pub use fuzz_budget::{FUZZ_SCALE_VAR, fuzz_cases, fuzz_config};
