//! Write a directory so that readers see either the old directory or the complete new one, never a
//! half-filled one: the caller fills a fresh temporary sibling (`.NAME.tmp-PID`), every file and
//! directory in it is fsynced, the previous directory (if any) is moved aside, the temporary one is
//! renamed into place, the parent directory is fsynced, and the one moved aside is removed. The one
//! directory swap every calibra crate uses (eval and report output folders, merged run stores, trained
//! model directories, training checkpoints); callers add their own error type.
//!
//! A crash leaves at most the temporary directory (which [`remove_dead_siblings`] or, under a run
//! store's lock, [`crate::remove_foreign_temporaries`] clears) and, between the two renames, the
//! previous directory at its aside path, complete.
use crate::atomic_file::{parent_dir, sync_dir};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// Why a directory write failed: an I/O step of the swap (with the path it concerned), or the caller's
/// own error from filling the directory. Either way the temporary directory is gone and the target is
/// as it was.
#[derive(Debug)]
pub enum DirWriteError<E> {
    Io { path: PathBuf, source: std::io::Error },
    Fill(E),
}

impl<E> DirWriteError<E> {
    /// The caller's error: its own fill error as it was, an I/O step of the swap through `io`.
    pub fn into_error(self, io: impl FnOnce(PathBuf, std::io::Error) -> E) -> E {
        match self {
            DirWriteError::Io { path, source } => io(path, source),
            DirWriteError::Fill(e) => e,
        }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for DirWriteError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DirWriteError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            DirWriteError::Fill(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for DirWriteError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DirWriteError::Io { source, .. } => Some(source),
            DirWriteError::Fill(e) => Some(e),
        }
    }
}

/// Where a directory write puts things: the temporary sibling it fills and, when the target exists,
/// where the previous directory waits during the swap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirSwap {
    pub target: PathBuf,
    pub temporary: PathBuf,
    pub aside: PathBuf,
}

impl DirSwap {
    /// `.NAME.tmp-PID` and `.NAME.old-PID` beside `target`.
    pub fn beside(target: &Path) -> std::io::Result<Self> {
        let name = target.file_name().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path has no directory name")
        })?;
        let name = name.to_string_lossy();
        let parent = parent_dir(target);
        let pid = std::process::id();
        Ok(DirSwap {
            target: target.to_path_buf(),
            temporary: parent.join(format!(".{name}.tmp-{pid}")),
            aside: parent.join(format!(".{name}.old-{pid}")),
        })
    }

    /// The same temporary, with the previous directory kept at the fixed path `aside` during the swap
    /// (a reader that finds no target falls back to it: training checkpoints).
    pub fn with_aside(mut self, aside: PathBuf) -> Self {
        self.aside = aside;
        self
    }

    /// Fill the temporary directory with `fill(temporary)`, then swap it in (see the module docs). On
    /// any error the temporary directory is removed and the target is untouched.
    pub fn write<T, E, F>(&self, fill: F) -> Result<T, DirWriteError<E>>
    where
        F: FnOnce(&Path) -> Result<T, E>,
    {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| DirWriteError::Io { path, source }
        };
        let parent = parent_dir(&self.target);
        fs::create_dir_all(parent).map_err(io(parent))?;
        if self.temporary.exists() {
            fs::remove_dir_all(&self.temporary).map_err(io(&self.temporary))?;
        }
        let result = (|| {
            fs::create_dir(&self.temporary).map_err(io(&self.temporary))?;
            let value = fill(&self.temporary).map_err(DirWriteError::Fill)?;
            sync_tree(&self.temporary)?;
            // At every moment a complete directory is at the target or, between the renames, aside:
            // an aside left by an earlier crash is dropped only once the target is complete.
            if self.target.exists() {
                if self.aside.exists() {
                    fs::remove_dir_all(&self.aside).map_err(io(&self.aside))?;
                }
                fs::rename(&self.target, &self.aside).map_err(io(&self.target))?;
            }
            fs::rename(&self.temporary, &self.target).map_err(io(&self.target))?;
            sync_dir(parent);
            if self.aside.exists() {
                fs::remove_dir_all(&self.aside).map_err(io(&self.aside))?;
            }
            Ok(value)
        })();
        if result.is_err() && self.temporary.exists() {
            let _ = fs::remove_dir_all(&self.temporary);
        }
        result
    }
}

/// [`DirSwap::beside`] then [`DirSwap::write`]: the usual directory write.
pub fn write_dir_atomically<T, E, F>(target: &Path, fill: F) -> Result<T, DirWriteError<E>>
where
    F: FnOnce(&Path) -> Result<T, E>,
{
    let swap =
        DirSwap::beside(target).map_err(|source| DirWriteError::Io { path: target.to_path_buf(), source })?;
    swap.write(fill)
}

/// fsync every file and directory under `dir` (and `dir` itself), depth first.
fn sync_tree<E>(dir: &Path) -> Result<(), DirWriteError<E>> {
    let io = |path: &Path, source| DirWriteError::Io { path: path.to_path_buf(), source };
    for entry in fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let path = entry.path();
        if entry.file_type().map_err(|e| io(&path, e))?.is_dir() {
            sync_tree(&path)?;
        } else {
            File::open(&path).and_then(|f| f.sync_all()).map_err(|e| io(&path, e))?;
        }
    }
    sync_dir(dir);
    Ok(())
}

/// Removes what a killed directory writer left beside `target`: `.NAME.tmp-PID` directories of
/// processes that no longer run (checked through `/proc`; nothing is removed where `/proc` is absent),
/// and `.NAME.old-PID` ones when `target` exists (the swap finished; only the clean-up was cut). For
/// directories that no lock guards (eval and report output folders). Returns what was removed.
pub fn remove_dead_siblings(target: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else { return removed };
    if !Path::new("/proc/self").exists() {
        return removed;
    }
    let target_exists = target.exists();
    let Ok(entries) = fs::read_dir(parent_dir(target)) else { return removed };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix(&format!(".{name}.")) else { continue };
        let (kind, pid) = match rest.split_once('-') {
            Some((kind @ ("tmp" | "old"), pid)) => (kind, pid),
            _ => continue,
        };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let dead = pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists();
        if dead && (kind == "tmp" || target_exists) && fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_testkit::sorted_names;

    #[test]
    fn a_new_directory_appears_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let n = write_dir_atomically(&target, |tmp| -> Result<usize, std::io::Error> {
            fs::create_dir(tmp.join("figures"))?;
            fs::write(tmp.join("figures/a.svg"), "<svg/>")?;
            fs::write(tmp.join("report.md"), "# r")?;
            Ok(2)
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(sorted_names(dir.path()), ["out"]);
        assert_eq!(fs::read_to_string(target.join("figures/a.svg")).unwrap(), "<svg/>");
    }

    #[test]
    fn a_replaced_directory_holds_only_the_new_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("stale.csv"), "old").unwrap();
        write_dir_atomically(&target, |tmp| fs::write(tmp.join("new.csv"), "new")).unwrap();
        assert_eq!(sorted_names(dir.path()), ["out"]);
        assert_eq!(sorted_names(&target), ["new.csv"]);
    }

    #[test]
    fn a_failing_fill_leaves_the_old_directory_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("kept.csv"), "old").unwrap();
        let err = write_dir_atomically(&target, |tmp| {
            fs::write(tmp.join("partial.csv"), "half")?;
            Err::<(), _>(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(matches!(err, DirWriteError::Fill(ref e) if e.to_string() == "disk full"), "{err}");
        let text =
            err.into_error(|path, source| std::io::Error::other(format!("{}: {source}", path.display())));
        assert_eq!(text.to_string(), "disk full", "a fill error comes back as it was");
        let io =
            DirWriteError::<String>::Io { path: "/x".into(), source: std::io::Error::other("no rename") };
        assert_eq!(io.into_error(|path, source| format!("{}: {source}", path.display())), "/x: no rename");
        assert_eq!(sorted_names(dir.path()), ["out"]);
        assert_eq!(sorted_names(&target), ["kept.csv"]);
    }

    #[test]
    fn a_fixed_aside_path_is_used_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("checkpoint");
        let aside = dir.path().join("checkpoint.old");
        fs::create_dir(&aside).unwrap(); // a crash between the renames of an earlier write
        fs::write(aside.join("state.json"), "{\"step\": 1}").unwrap();
        let swap = DirSwap::beside(&target).unwrap().with_aside(aside.clone());
        swap.write(|tmp| fs::write(tmp.join("state.json"), "{}")).unwrap();
        assert_eq!(sorted_names(dir.path()), ["checkpoint"]);
        assert_eq!(sorted_names(&target), ["state.json"]);
    }

    #[test]
    fn dead_writers_temporaries_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        fs::create_dir(&target).unwrap();
        // No process has pid 0 in /proc; this process is alive.
        let dead_tmp = dir.path().join(".report.tmp-0");
        let dead_old = dir.path().join(".report.old-0");
        let live_tmp = dir.path().join(format!(".report.tmp-{}", std::process::id()));
        for d in [&dead_tmp, &dead_old, &live_tmp] {
            fs::create_dir(d).unwrap();
        }
        fs::create_dir(dir.path().join(".other.tmp-0")).unwrap();
        let removed = remove_dead_siblings(&target);
        assert_eq!(removed, [dead_old.clone(), dead_tmp.clone()]);
        assert!(live_tmp.exists() && !dead_tmp.exists() && !dead_old.exists());
        assert!(dir.path().join(".other.tmp-0").exists(), "another directory's temporaries are not ours");
    }
}
