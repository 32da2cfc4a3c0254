//! The run store's lock file: `<store>/.lock`, created with `O_CREAT | O_EXCL` (atomic on local
//! filesystems and on NFSv3+), holding one JSON line `{"pid":…, "host":"…", "started_unix_s":…}`.
//!
//! A second process on the same store gets [`RunError::Locked`] naming the holder. The lock is removed
//! when the [`StoreLock`] is dropped (normal exit or error). A process killed with `kill -9` or a
//! machine crash leaves a **stale** lock: calibra never breaks a lock by itself (the holder may be
//! alive on another host sharing the filesystem); the message says which pid on which host holds it,
//! and — when the holder is on this host and its pid no longer exists — that the lock looks stale.
//! `--break-lock` removes a lock before taking it, except when the holder is on **this** host and
//! still alive (its pid exists and started no later than the lock was taken): that lock is never
//! broken ([`RunError::LockHolderAlive`] names the pid, host and start time and says what to do). A
//! holder on another host cannot be checked from here, so `--break-lock` trusts the caller there; a
//! holder on this host that is gone (a `kill -9`, a Slurm requeue onto the same node) is broken.

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
    /// Whether the holder is a live process on this host: same host name, `/proc/<pid>` exists, and
    /// that process started no later than the lock was written (a later start means the pid was reused
    /// by an unrelated process after the holder died). `false` when `/proc` is unavailable.
    pub fn alive_on_this_host(&self) -> bool {
        if self.host != host_name() || !Path::new("/proc/self").exists() {
            return false;
        }
        if !Path::new("/proc").join(self.pid.to_string()).exists() {
            return false;
        }
        match process_start_unix_s(self.pid) {
            // Allow 2 s of rounding between the boot-time clock and the lock's wall clock.
            Some(start) => start <= self.started_unix_s + 2,
            None => true,
        }
    }

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

/// Unix time at which process `pid` started, from `/proc/<pid>/stat` (field 22, in clock ticks since
/// boot; Linux reports it in USER_HZ = 100 ticks per second) and `btime` of `/proc/stat`.
fn process_start_unix_s(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse().ok()))?;
    Some(boot + ticks / 100)
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

    /// Takes the lock of the store at `dir`; with `break_lock`, removes an existing lock first unless
    /// its holder is alive on this host ([`LockHolder::alive_on_this_host`]).
    pub fn acquire(dir: &Path, break_lock: bool) -> Result<StoreLock, RunError> {
        let path = dir.join(Self::FILE);
        if break_lock && path.exists() {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if let Ok(holder) = serde_json::from_str::<LockHolder>(text.trim())
                && holder.alive_on_this_host()
            {
                return Err(RunError::LockHolderAlive {
                    path: dir.to_path_buf(),
                    pid: holder.pid,
                    host: holder.host,
                    started_unix_s: holder.started_unix_s,
                });
            }
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

    /// Issue 20 defect 1: `--break-lock` broke the lock of a live process, and two writers then
    /// interleaved their appends.
    #[test]
    fn break_lock_refuses_a_live_holder_on_this_host() {
        let dir = tempfile::tempdir().unwrap();
        let held = StoreLock::acquire(dir.path(), false).unwrap();
        let err = StoreLock::acquire(dir.path(), true).unwrap_err();
        assert!(matches!(err, RunError::LockHolderAlive { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
        assert!(text.contains(&host_name()), "{text}");
        assert!(text.contains("started at unix time"), "{text}");
        assert!(text.contains("wait for it") && text.contains("kill"), "{text}");
        // The lock is untouched and still ours.
        assert!(dir.path().join(StoreLock::FILE).exists());
        drop(held);
        assert!(!dir.path().join(StoreLock::FILE).exists());
    }

    #[test]
    fn break_lock_breaks_a_reused_pid_and_a_holder_on_another_host() {
        let dir = tempfile::tempdir().unwrap();
        // Our own pid, but a lock written long before this process started: the pid was reused.
        std::fs::write(
            dir.path().join(StoreLock::FILE),
            format!("{{\"pid\":{},\"host\":\"{}\",\"started_unix_s\":1}}\n", std::process::id(), host_name()),
        )
        .unwrap();
        drop(StoreLock::acquire(dir.path(), true).unwrap());
        // Another host cannot be checked: the caller's word is taken (a Slurm requeue elsewhere).
        std::fs::write(
            dir.path().join(StoreLock::FILE),
            format!(
                "{{\"pid\":{},\"host\":\"not-{}\",\"started_unix_s\":{}}}\n",
                std::process::id(),
                host_name(),
                now_unix_s()
            ),
        )
        .unwrap();
        assert!(StoreLock::acquire(dir.path(), false).is_err());
        drop(StoreLock::acquire(dir.path(), true).unwrap());
        // An unreadable lock file is broken on request.
        std::fs::write(dir.path().join(StoreLock::FILE), "garbage").unwrap();
        drop(StoreLock::acquire(dir.path(), true).unwrap());
    }
}
