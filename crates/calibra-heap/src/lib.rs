//! calibra-heap: the process's heap policy. It owns one decision, made once at start-up by the
//! `calibra` binary and the benchmarks: whether glibc keeps the memory that tensors free, so the
//! next tensor of the same size reuses it, or hands it back to the kernel.
//!
//! Why: burn's CPU backend allocates every op's output afresh. glibc serves blocks above its
//! `mmap` threshold (at most 32 MiB) with `mmap` and returns them with `munmap` on free, and it trims
//! the top of its heap once more than twice that threshold is free there. A ViT-B/16 batch makes
//! tens of such buffers a layer, and each first touch of each 4 KiB page faults into the kernel,
//! which zeroes it. With the policy applied ([`HeapPolicy::RetainFreed`]) no block is mapped apart
//! from the heap and the heap is never trimmed, so freed pages are reused without a fault. The peak
//! resident memory stays what the largest step needs; it is not returned to the system until the
//! process exits. Measured in benches/RESULTS.md ("The heap policy").
//!
//! Opt out with `CALIBRA_HEAP=system`. A `GLIBC_TUNABLES` that sets any `glibc.malloc.` tunable is
//! the user's own choice and is left alone. Other C libraries (musl, macOS) are left as they are.
//!
//! Must not depend on: any other calibra crate, burn, or anything beyond std, `thiserror` and
//! `libc` (glibc targets only). Its only `unsafe` is the `mallopt` call in `mallopt.rs`.
#![deny(unsafe_code)]

mod mallopt;
pub mod policy;

pub use policy::{HEAP_VARIABLE, HeapPolicy, HeapPolicyError, Unchanged};
