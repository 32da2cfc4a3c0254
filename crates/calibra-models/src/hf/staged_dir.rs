//! Writing a converted checkpoint directory all or nothing: the files go into a temporary sibling of
//! the target, the caller's check loads them back, and only then is the directory renamed into place.
//! A failed check, an error or a kill leaves no directory at the target (a killed process can leave a
//! `.calibra-convert-*` sibling, which nothing reads).

use std::path::{Path, PathBuf};

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
/// staging directory. `out` must not exist.
pub fn publish_directory(
    out: &Path,
    files: &[(&str, &[u8])],
    check: impl FnOnce(&Path) -> Result<(), ModelError>,
) -> Result<(), ModelError> {
    refuse_existing(out)?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ModelError::Io { path, source }
    };
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let staging =
        tempfile::Builder::new().prefix(".calibra-convert-").tempdir_in(&parent).map_err(io(&parent))?;
    for (name, bytes) in files {
        let path = staging.path().join(name);
        std::fs::write(&path, bytes).map_err(io(&path))?;
    }
    check(staging.path())?;
    let staged = staging.keep();
    std::fs::rename(&staged, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        ModelError::Io { path: out.into(), source: e }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn published_only_when_the_check_passes() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("ck");
        let refused = publish_directory(&out, &[("a.json", b"{}")], |staged| {
            assert!(staged.join("a.json").is_file());
            Err(ModelError::Input("does not load".into()))
        });
        assert!(refused.unwrap_err().to_string().contains("does not load"));
        assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));

        publish_directory(&out, &[("a.json", b"{}"), ("b.bin", b"xy")], |_| Ok(())).unwrap();
        assert_eq!(entries(&out), ["a.json", "b.bin"]);
        assert_eq!(entries(tmp.path()), ["ck"]);

        let again = publish_directory(&out, &[("c", b"")], |_| Ok(())).unwrap_err().to_string();
        assert!(again.contains("already exists"), "{again}");
        assert_eq!(entries(&out), ["a.json", "b.bin"]);
    }
}
