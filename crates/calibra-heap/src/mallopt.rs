//! The one `unsafe` call: glibc's `mallopt`, which sets the heap's options for the whole process.
//! `Ok(true)`: both options are set; `Ok(false)`: not glibc, nothing was set.

use crate::policy::HeapPolicyError;

/// `mallopt(M_MMAP_MAX, 0)`: no allocation is served by its own `mmap`, so no freed block goes back
/// to the kernel by `munmap`. `mallopt(M_TRIM_THRESHOLD, -1)`: the heap's top is never trimmed
/// (glibc's documented value for "never"). glibc's `malloc` still serves every size: a thread
/// arena that cannot hold a block passes it to the main arena, which grows with `brk` (or, if that
/// fails, with a mapping of its own that stays part of the heap).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn retain_freed_memory() -> Result<bool, HeapPolicyError> {
    for (option, name, value) in
        [(libc::M_MMAP_MAX, "M_MMAP_MAX", 0), (libc::M_TRIM_THRESHOLD, "M_TRIM_THRESHOLD", -1)]
    {
        // SAFETY: `mallopt` takes two integers and no pointers; glibc documents both options and
        // both values, and serialises the call against concurrent allocations with its own lock.
        #[allow(unsafe_code)]
        let accepted = unsafe { libc::mallopt(option, value) };
        if accepted == 0 {
            return Err(HeapPolicyError::Refused { option: name, value });
        }
    }
    Ok(true)
}

/// Not glibc: there is no `mallopt` to call, and the heap stays as it is (`false`).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn retain_freed_memory() -> Result<bool, HeapPolicyError> {
    Ok(false)
}
