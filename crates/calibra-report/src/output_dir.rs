//! Writing an output directory whole: complete or absent. Everything is written (each file
//! atomically) into a temporary sibling directory that is renamed to DIR at the end; on error the
//! temporary directory is removed. An existing DIR is an error unless `force`, which replaces it only
//! after the new one is complete.

use crate::EvalError;
use std::path::Path;

/// Write `files` (relative path, bytes) as the directory `out`. Leftovers of an interrupted earlier
/// write beside `out` are removed and named through `log`: dead temporaries first, and, once `out` is
/// complete again, a previous directory that a write killed between its two renames left aside
/// (kept until then, since it was the only complete copy).
pub fn write_output_dir(
    out: &Path,
    files: &[(String, Vec<u8>)],
    force: bool,
    log: &mut dyn FnMut(&str),
) -> Result<(), EvalError> {
    if out.exists() && !force {
        return Err(EvalError::OutExists(out.to_path_buf()));
    }
    remove_leftovers(out, log);
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
    .map_err(|e| e.into_error(|path, source| write(&path, "cannot write the output directory", source)))?;
    remove_leftovers(out, log);
    Ok(())
}

/// Removes what interrupted writes left beside `out` ([`calibra_core::remove_dead_siblings`]), naming
/// each through `log`.
fn remove_leftovers(out: &Path, log: &mut dyn FnMut(&str)) {
    for path in calibra_core::remove_dead_siblings(out) {
        log(&format!("removed {}, left by an interrupted eval or report", path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_testkit::sorted_names;

    /// A report killed between moving the old one aside and renaming the new one in leaves no `out`
    /// and the old report at `.out.old-PID` (pid 0: never a running process). The next write keeps it
    /// until the new `out` is complete, then removes it: nothing is left beside `out`.
    #[test]
    fn a_previous_directory_left_aside_by_a_kill_is_removed_once_the_new_one_is_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let aside = dir.path().join(".out.old-0");
        std::fs::create_dir(&aside).unwrap();
        std::fs::write(aside.join("report.md"), "old").unwrap();
        let tmp = dir.path().join(".out.tmp-0");
        std::fs::create_dir(&tmp).unwrap();
        let mut said = Vec::new();
        let files = vec![("report.md".to_string(), b"new".to_vec())];
        write_output_dir(&out, &files, false, &mut |m| said.push(m.to_string())).unwrap();
        assert_eq!(sorted_names(dir.path()), ["out"]);
        assert_eq!(std::fs::read_to_string(out.join("report.md")).unwrap(), "new");
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains(".out.tmp-0") && said[1].contains(".out.old-0"), "{said:?}");
    }
}
