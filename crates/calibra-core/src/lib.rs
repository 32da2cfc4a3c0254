//! calibra-core: leaf plumbing that every calibra crate may use (ARCHITECTURE.md). Today it owns
//! [`line_index`], the physical line numbers of records read through the csv crate (whose own line
//! count skips blank lines), [`atomic_file`], the one atomic file write (temporary file, fsync,
//! rename, directory fsync), [`atomic_dir`], the one directory swap (fill a temporary sibling,
//! fsync it, rename it into place), [`normal`], the one Box–Muller standard normal, and
//! [`prompt_templates`], the one list of MVC-Bench prompt templates.
//!
//! Must not depend on: any other calibra crate, burn, or anything beyond std and `rand` (for the
//! generic random stream of [`normal`]).
#![forbid(unsafe_code)]

pub mod atomic_dir;
pub mod atomic_file;
pub mod line_index;
pub mod normal;
pub mod prompt_templates;

pub use atomic_dir::{DirSwap, DirWriteError, remove_dead_siblings, write_dir_atomically};
pub use atomic_file::{
    remove_foreign_temporaries, temporary_owner, write_atomically, write_atomically_with,
    write_bytes_atomically,
};
pub use line_index::{IndexedReader, LineIndex};
pub use normal::{standard_normal, standard_normal_pair};
pub use prompt_templates::{MVC_BENCH_TEMPLATES, mvc_bench_template};
