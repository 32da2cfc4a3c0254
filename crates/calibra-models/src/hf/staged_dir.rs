//! Writing a converted checkpoint directory all or nothing: the files go into a temporary sibling of
//! the target (calibra-core's `.NAME.tmp-PID`, fsynced), the caller's check loads them back, and only
//! then is the directory renamed into place. A failed check or an error leaves no directory at the
//! target; what a killed conversion left beside it is cleared by the next one
//! (`calibra_core::remove_dead_siblings`).

use std::path::Path;

use crate::error::ModelError;

/// An error when `out` exists: a conversion never overwrites (checked again at publication; call
/// it first to fail before reading a large source).
pub fn refuse_existing(out: &Path) -> Result<(), ModelError> {
    if out.exists() {
        return Err(ModelError::Input(format!(
            "{}: already exists; give a new directory (a conversion never overwrites)",
            out.display()
        )));
    }
    Ok(())
}

/// Writes `files` (name, bytes) into a new directory `out`, after `check` accepted them in the
/// temporary directory. `out` must not exist.
pub fn publish_directory(
    out: &Path,
    files: &[(&str, &[u8])],
    check: impl FnOnce(&Path) -> Result<(), ModelError>,
) -> Result<(), ModelError> {
    refuse_existing(out)?;
    calibra_core::remove_dead_siblings(out);
    calibra_core::write_dir_atomically(out, |staged| -> Result<(), ModelError> {
        for (name, bytes) in files {
            let path = staged.join(name);
            std::fs::write(&path, bytes).map_err(|source| ModelError::Io { path, source })?;
        }
        check(staged)
    })
    .map_err(|e| e.into_error(|path, source| ModelError::Io { path, source }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_testkit::sorted_names;

    #[test]
    fn published_only_when_the_check_passes() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("ck");
        let refused = publish_directory(&out, &[("a.json", b"{}")], |staged| {
            assert!(staged.join("a.json").is_file());
            Err(ModelError::Input("does not load".into()))
        });
        assert!(refused.unwrap_err().to_string().contains("does not load"));
        assert!(sorted_names(tmp.path()).is_empty(), "{:?}", sorted_names(tmp.path()));

        // What a killed conversion left (pid 0: never a running process) is cleared by the next one.
        std::fs::create_dir(tmp.path().join(".ck.tmp-0")).unwrap();
        publish_directory(&out, &[("a.json", b"{}"), ("b.bin", b"xy")], |_| Ok(())).unwrap();
        assert_eq!(sorted_names(&out), ["a.json", "b.bin"]);
        assert_eq!(sorted_names(tmp.path()), ["ck"]);

        let again = publish_directory(&out, &[("c", b"")], |_| Ok(())).unwrap_err().to_string();
        assert!(again.contains("already exists"), "{again}");
        assert_eq!(sorted_names(&out), ["a.json", "b.bin"]);
    }
}
