//! Write a file so that readers see either the old content or the complete new content, never a
//! prefix: write to a temporary file in the same directory (`.NAME.tmp-PID`), fsync it, rename it over
//! the target, then fsync the directory. The one implementation every calibra crate uses (predictions,
//! feature caches, pixel caches, adapters, prompts, reports); callers add their own error type.
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::path::PathBuf;

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
    let dir = parent_dir(path);
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
        sync_dir(dir);
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The directory `path` lives in (`.` for a bare name), where its temporary sibling goes.
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// fsync a directory, so that the entries created or renamed in it persist; best effort, since not
/// every platform lets a directory be opened for syncing.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// [`write_atomically`] of a byte slice.
pub fn write_bytes_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically(path, |w| w.write_all(bytes))
}

/// The process id in a temporary name of calibra's atomic writers (`.NAME.tmp-PID` for files, also
/// `NAME.tmp-PID` for directories), or `None` when `name` is not one.
pub fn temporary_owner(name: &str) -> Option<u32> {
    let (stem, pid) = name.rsplit_once(".tmp-")?;
    if stem.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Removes, recursively under `dir`, every temporary file or directory ([`temporary_owner`]) that
/// another process named: what a writer killed mid-write leaves. Only for directories whose writers
/// hold an exclusive lock (the run store's), where any other process's temporary is a dead writer's.
/// Best effort (an unreadable directory is skipped); returns what was removed, in walk order.
pub fn remove_foreign_temporaries(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let me = std::process::id();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let owner = entry.file_name().to_str().and_then(temporary_owner);
            match owner {
                Some(pid) if pid != me => {
                    let gone = if is_dir { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
                    if gone.is_ok() {
                        removed.push(path);
                    }
                }
                _ if is_dir => stack.push(path),
                _ => {}
            }
        }
    }
    removed
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
    fn temporary_names_carry_their_writer() {
        assert_eq!(temporary_owner(".clean.csv.tmp-4242"), Some(4242));
        assert_eq!(temporary_owner("checkpoint.tmp-7"), Some(7));
        for not in ["clean.csv", ".tmp-12", "x.tmp-", "x.tmp-12a", "x.tmp", "x.merge-tmp-3"] {
            assert_eq!(temporary_owner(not), None, "{not}");
        }
    }

    #[test]
    fn foreign_temporaries_are_removed_and_everything_else_kept() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        fs::create_dir_all(deep.join("checkpoint.tmp-1")).unwrap();
        fs::write(deep.join("checkpoint.tmp-1/model.bin"), "x").unwrap();
        fs::write(deep.join(".clean.csv.tmp-2"), "partial").unwrap();
        fs::write(deep.join("clean.csv"), "whole").unwrap();
        let mine = deep.join(format!(".mine.csv.tmp-{}", std::process::id()));
        fs::write(&mine, "in progress").unwrap();
        let removed = remove_foreign_temporaries(dir.path());
        assert_eq!(removed, vec![deep.join(".clean.csv.tmp-2"), deep.join("checkpoint.tmp-1")]);
        let mut left: Vec<_> = fs::read_dir(&deep).unwrap().map(|e| e.unwrap().path()).collect();
        left.sort();
        assert_eq!(left, vec![mine, deep.join("clean.csv")]);
    }

    #[test]
    fn success_replaces_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        write_atomically(&target, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }
}
