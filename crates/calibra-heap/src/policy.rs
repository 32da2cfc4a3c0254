//! Which heap policy the environment asks for, and applying it.

use thiserror::Error;

/// The environment variable that chooses the policy: `retain` (the default) or `system`.
pub const HEAP_VARIABLE: &str = "CALIBRA_HEAP";

/// What the process's heap does with freed memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapPolicy {
    /// glibc keeps freed memory for reuse: no allocation is served by `mmap` and the heap is never
    /// trimmed (`mallopt(M_MMAP_MAX, 0)`, `mallopt(M_TRIM_THRESHOLD, -1)`).
    RetainFreed,
    /// The C library's defaults stay, for the reason given.
    Unchanged(Unchanged),
}

/// Why the heap policy was left as the C library has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchanged {
    /// `CALIBRA_HEAP=system`.
    OptedOut,
    /// `GLIBC_TUNABLES` sets a `glibc.malloc.` tunable: the user's own heap settings win.
    GlibcTunables,
    /// Not a glibc target: there is nothing of glibc's to set.
    NotGlibc,
}

/// The policy could not be chosen or applied.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum HeapPolicyError {
    /// `CALIBRA_HEAP` holds something else than `retain` or `system`.
    #[error(
        "{HEAP_VARIABLE}={value:?} is not a heap policy: expected \"retain\" (the default) or \"system\""
    )]
    UnknownPolicy {
        /// The value found.
        value: String,
    },
    /// glibc's `mallopt` returned 0 for one of the two settings.
    #[error("glibc refused mallopt({option}, {value}); the heap keeps its defaults")]
    Refused {
        /// The option's name in `<malloc.h>`.
        option: &'static str,
        /// The value passed.
        value: i32,
    },
}

impl HeapPolicy {
    /// The policy asked for by `CALIBRA_HEAP` and `GLIBC_TUNABLES`, given as their values (`None`:
    /// unset). Pure, so that it can be tested without touching the process's environment.
    pub fn choose(calibra_heap: Option<&str>, glibc_tunables: Option<&str>) -> Result<Self, HeapPolicyError> {
        match calibra_heap.map(str::trim) {
            None | Some("") | Some("retain") => {}
            Some("system") => return Ok(HeapPolicy::Unchanged(Unchanged::OptedOut)),
            Some(other) => return Err(HeapPolicyError::UnknownPolicy { value: other.to_string() }),
        }
        if glibc_tunables.is_some_and(|tunables| tunables.contains("glibc.malloc.")) {
            return Ok(HeapPolicy::Unchanged(Unchanged::GlibcTunables));
        }
        if !cfg!(all(target_os = "linux", target_env = "gnu")) {
            return Ok(HeapPolicy::Unchanged(Unchanged::NotGlibc));
        }
        Ok(HeapPolicy::RetainFreed)
    }

    /// The policy this process's environment asks for (see [`choose`](Self::choose)).
    pub fn from_env() -> Result<Self, HeapPolicyError> {
        let read = |name: &str| std::env::var(name).ok();
        Self::choose(read(HEAP_VARIABLE).as_deref(), read("GLIBC_TUNABLES").as_deref())
    }

    /// Put the policy into effect for the whole process. Call it first thing in `main`: memory
    /// already handed back to the kernel is not affected, and blocks mapped before the call are
    /// still unmapped when freed. Returns the policy now in effect: applying
    /// [`HeapPolicy::Unchanged`] does nothing, and [`HeapPolicy::RetainFreed`] off glibc becomes
    /// `Unchanged(NotGlibc)`.
    pub fn apply(self) -> Result<Self, HeapPolicyError> {
        match self {
            HeapPolicy::RetainFreed if !crate::mallopt::retain_freed_memory()? => {
                Ok(HeapPolicy::Unchanged(Unchanged::NotGlibc))
            }
            policy => Ok(policy),
        }
    }

    /// Choose from the environment and apply: what `main` calls.
    pub fn apply_from_env() -> Result<Self, HeapPolicyError> {
        Self::from_env()?.apply()
    }

    /// One line for logs: what the heap does now.
    pub fn describe(self) -> &'static str {
        match self {
            HeapPolicy::RetainFreed => "freed memory is kept for reuse (CALIBRA_HEAP=retain)",
            HeapPolicy::Unchanged(Unchanged::OptedOut) => "the C library's defaults (CALIBRA_HEAP=system)",
            HeapPolicy::Unchanged(Unchanged::GlibcTunables) => "the C library's, as GLIBC_TUNABLES sets it",
            HeapPolicy::Unchanged(Unchanged::NotGlibc) => "the C library's defaults (not glibc)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_retain_asks_for_retained_memory_on_glibc() {
        let expected = if cfg!(all(target_os = "linux", target_env = "gnu")) {
            HeapPolicy::RetainFreed
        } else {
            HeapPolicy::Unchanged(Unchanged::NotGlibc)
        };
        for value in [None, Some(""), Some("retain"), Some(" retain\n")] {
            assert_eq!(HeapPolicy::choose(value, None), Ok(expected), "{value:?}");
        }
        assert_eq!(HeapPolicy::choose(None, Some("glibc.rtld.nns=2")), Ok(expected));
    }

    #[test]
    fn system_opts_out_and_malloc_tunables_win() {
        assert_eq!(HeapPolicy::choose(Some("system"), None), Ok(HeapPolicy::Unchanged(Unchanged::OptedOut)));
        let tunables = Some("glibc.rtld.nns=2:glibc.malloc.hugetlb=1");
        assert_eq!(HeapPolicy::choose(None, tunables), Ok(HeapPolicy::Unchanged(Unchanged::GlibcTunables)));
        // The opt-out is checked first: it needs no tunables to mean what it says.
        assert_eq!(
            HeapPolicy::choose(Some("system"), tunables),
            Ok(HeapPolicy::Unchanged(Unchanged::OptedOut))
        );
    }

    #[test]
    fn an_unknown_policy_is_an_error_naming_the_variable_and_the_choices() {
        let error = HeapPolicy::choose(Some("jemalloc"), None).unwrap_err();
        assert_eq!(error, HeapPolicyError::UnknownPolicy { value: "jemalloc".into() });
        let message = error.to_string();
        assert!(message.contains("CALIBRA_HEAP=\"jemalloc\""), "{message}");
        assert!(message.contains("\"retain\"") && message.contains("\"system\""), "{message}");
    }

    #[test]
    fn unchanged_policies_apply_as_nothing() {
        for reason in [Unchanged::OptedOut, Unchanged::GlibcTunables, Unchanged::NotGlibc] {
            assert_eq!(HeapPolicy::Unchanged(reason).apply(), Ok(HeapPolicy::Unchanged(reason)));
        }
    }
}
