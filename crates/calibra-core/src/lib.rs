//! calibra-core: leaf plumbing that every calibra crate may use (ARCHITECTURE.md). Today it owns
//! [`line_index`], the physical line numbers of records read through the csv crate (whose own line
//! count skips blank lines); the fit/predict issue moves the other shared plumbing here (atomic
//! writes, fingerprints, the names registry).
//!
//! Must not depend on: any other calibra crate, burn, or anything beyond std.
#![forbid(unsafe_code)]

pub mod line_index;

pub use line_index::{IndexedReader, LineIndex};
