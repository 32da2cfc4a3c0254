//! Write a file so that readers see either the old content or the complete new content, never a
//! prefix: write to a temporary file in the same directory (`.NAME.tmp-PID`), fsync it, rename it over
//! the target, then fsync the directory. The one implementation every calibra crate uses (predictions,
//! feature caches, pixel caches, adapters, prompts, reports); callers add their own error type.
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;

/// Create `path` atomically with the bytes `fill` writes. On any error (including an error returned by
/// `fill`) the temporary file is removed and `path` is left untouched. The error is the I/O error
/// alone: callers name `path` in their own error type.
pub fn write_atomically<F>(path: &Path, fill: F) -> std::io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    write_atomically_with(path, fill, |from, to| fs::rename(from, to))
}

/// [`write_atomically`] with the final rename done by `rename(temporary, path)`: the hook fault-injection
/// tests use to make the rename fail (the temporary file is removed, `path` untouched, as for any error).
pub fn write_atomically_with<F, R>(path: &Path, fill: F, rename: R) -> std::io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
    R: FnOnce(&Path, &Path) -> std::io::Result<()>,
{
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let file = File::create(&tmp)?;
        let mut out = BufWriter::new(file);
        fill(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        rename(&tmp, path)?;
        // Persist the rename itself where the platform allows opening a directory.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// [`write_atomically`] of a byte slice.
pub fn write_bytes_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically(path, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_writer_leaves_neither_target_nor_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        fs::write(&target, "old").unwrap();
        let err = write_atomically(&target, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("simulated failure"))
        });
        assert!(err.is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "temp file must be cleaned up");
    }

    #[test]
    fn a_failing_rename_leaves_neither_target_nor_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        fs::write(&target, "old").unwrap();
        let err = write_atomically_with(
            &target,
            |w| w.write_all(b"new"),
            |_, _| Err(std::io::Error::other("no rename")),
        );
        assert!(err.unwrap_err().to_string().contains("no rename"));
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "temp file must be cleaned up");
    }

    #[test]
    fn success_replaces_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        write_atomically(&target, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }
}
