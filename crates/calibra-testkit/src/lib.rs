//! Test support for calibra's crates, used only as a dev-dependency: the byte-mutation strategy every
//! reader's fuzz target starts from ([`byte_mutation`]), and the case budget all fuzz targets share
//! ([`fuzz_config`]), so that one environment variable lengthens every fuzz run; and the five-axis run
//! set that the crate and CLI tests of the selective CRS axis share ([`five_axis_runs`]); and a sorted
//! directory listing for the tests of writers that must leave nothing behind ([`sorted_names`]).
//!
//! It depends on proptest and serde_json only, and nothing of calibra: a production crate must never
//! depend on it.

#![forbid(unsafe_code)]

mod byte_mutation;
mod dir_listing;
mod five_axis_runs;
mod fuzz_budget;

pub use byte_mutation::{ByteEdit, apply_edits, byte_edit};
pub use dir_listing::sorted_names;
pub use five_axis_runs::five_axis_runs;
pub use fuzz_budget::{FUZZ_SCALE_VAR, fuzz_cases, fuzz_config};
