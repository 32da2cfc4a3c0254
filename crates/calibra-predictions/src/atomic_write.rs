//! calibra-core's atomic file write ([`calibra_core::atomic_file`]) with this crate's error type,
//! which names the file.

use crate::PredictionsError;
use std::io::Write;
use std::path::Path;

/// Create `path` atomically with the bytes `fill` writes ([`calibra_core::write_atomically`]); on any
/// error `path` is untouched and no temporary file remains.
pub fn write_atomically<F>(path: &Path, fill: F) -> Result<(), PredictionsError>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    calibra_core::write_atomically(path, fill)
        .map_err(|error| PredictionsError::Write { path: path.to_path_buf(), error })
}

/// [`write_atomically`] with the final rename done by `rename(temporary, path)`: the hook fault-injection
/// tests use to make the rename fail.
pub fn write_atomically_with<F, R>(path: &Path, fill: F, rename: R) -> Result<(), PredictionsError>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
    R: FnOnce(&Path, &Path) -> std::io::Result<()>,
{
    calibra_core::write_atomically_with(path, fill, rename)
        .map_err(|error| PredictionsError::Write { path: path.to_path_buf(), error })
}
