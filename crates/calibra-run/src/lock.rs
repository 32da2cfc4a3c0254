//! The run store's lock file: `<store>/.lock`, created with `O_CREAT | O_EXCL` (atomic on local
//! filesystems and on NFSv3+), holding one JSON line `{"pid":…, "host":"…", "started_unix_s":…}`.
//!
//! A second process on the same store gets [`RunError::Locked`] naming the holder. The lock is removed
//! when the [`StoreLock`] is dropped (normal exit or error). A process killed with `kill -9` or a
//! machine crash leaves a **stale** lock: calibra never breaks a lock by itself (the holder may be
//! alive on another host sharing the filesystem); the message says which pid on which host holds it,
//! and — when the holder is on this host and its pid no longer exists — that the lock looks stale.
//! `--break-lock` removes a lock before taking it: use it only once you know the holder is gone.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::RunError;

/// The contents of a lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    pub pid: u32,
    pub host: String,
    pub started_unix_s: u64,
}

impl LockHolder {
    fn describe(&self, path: &Path) -> String {
        let mut text = format!(
            "pid {} on host `{}` since unix time {} ({})",
            self.pid,
            self.host,
            self.started_unix_s,
            path.display()
        );
        if self.host == host_name()
            && !Path::new("/proc").join(self.pid.to_string()).exists()
            && Path::new("/proc/self").exists()
        {
            text.push_str("; no process with that pid runs on this host, so the lock looks stale");
        }
        text
    }
}

/// This machine's host name (from /proc, then $HOSTNAME, else `unknown`).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// A held lock; released on drop.
#[derive(Debug)]
pub struct StoreLock {
    path: PathBuf,
}

impl StoreLock {
    /// The lock file name inside a store.
    pub const FILE: &'static str = ".lock";

    /// Takes the lock of the store at `dir`; with `break_lock`, removes an existing lock first.
    pub fn acquire(dir: &Path, break_lock: bool) -> Result<StoreLock, RunError> {
        let path = dir.join(Self::FILE);
        if break_lock && path.exists() {
            std::fs::remove_file(&path).map_err(|e| RunError::io(&path, "cannot remove the lock file", e))?;
        }
        let holder = LockHolder { pid: std::process::id(), host: host_name(), started_unix_s: now_unix_s() };
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                let line = serde_json::to_string(&holder).expect("a lock holder serialises") + "\n";
                file.write_all(line.as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(|e| RunError::io(&path, "cannot write the lock file", e))?;
                Ok(StoreLock { path })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let holder = match serde_json::from_str::<LockHolder>(text.trim()) {
                    Ok(h) => h.describe(&path),
                    Err(_) => {
                        format!("an unreadable lock file {} (contents: {:?})", path.display(), text.trim())
                    }
                };
                Err(RunError::Locked { path: dir.to_path_buf(), holder })
            }
            Err(e) => Err(RunError::io(&path, "cannot create the lock file", e)),
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_break_lock_takes_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = StoreLock::acquire(dir.path(), false).unwrap();
        let err = StoreLock::acquire(dir.path(), false).unwrap_err().to_string();
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert!(err.contains("--break-lock"), "{err}");
        drop(first);
        assert!(!dir.path().join(StoreLock::FILE).exists());
        let _again = StoreLock::acquire(dir.path(), false).unwrap();
        // A stale lock (a pid that cannot exist) is reported as stale and broken on request.
        std::fs::write(
            dir.path().join(StoreLock::FILE),
            format!("{{\"pid\":4294967295,\"host\":\"{}\",\"started_unix_s\":0}}\n", host_name()),
        )
        .unwrap();
        let err = StoreLock::acquire(dir.path(), false).unwrap_err().to_string();
        assert!(err.contains("looks stale"), "{err}");
        let _broken = StoreLock::acquire(dir.path(), true).unwrap();
    }
}
