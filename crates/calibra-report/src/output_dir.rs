//! Writing an output directory whole: complete or absent. Everything is written (each file
//! atomically) into a temporary sibling directory that is renamed to DIR at the end; on error the
//! temporary directory is removed. An existing DIR is an error unless `force`, which replaces it only
//! after the new one is complete.

use crate::EvalError;
use std::path::Path;

/// Write `files` (relative path, bytes) as the directory `out`. Leftovers of an interrupted earlier
/// write beside `out` are removed first and named through `log`.
pub fn write_output_dir(
    out: &Path,
    files: &[(String, Vec<u8>)],
    force: bool,
    log: &mut dyn FnMut(&str),
) -> Result<(), EvalError> {
    if out.exists() && !force {
        return Err(EvalError::OutExists(out.to_path_buf()));
    }
    for path in calibra_core::remove_dead_siblings(out) {
        log(&format!("removed {}, left by an interrupted eval or report", path.display()));
    }
    let write = |path: &Path, action, source| EvalError::Write { path: path.to_path_buf(), action, source };
    calibra_core::write_dir_atomically(out, |tmp| -> Result<(), EvalError> {
        for (rel, bytes) in files {
            let path = tmp.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| write(dir, "cannot create", e))?;
            }
            std::fs::write(&path, bytes).map_err(|e| write(&path, "cannot write", e))?;
        }
        Ok(())
    })
    .map_err(|e| e.into_error(|path, source| write(&path, "cannot write the output directory", source)))
}
