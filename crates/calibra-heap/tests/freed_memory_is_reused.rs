//! The policy's effect, measured on this process: a 48 MiB buffer freed and allocated again faults
//! its pages in afresh under glibc's defaults (it is above the 32 MiB ceiling of glibc's `mmap`
//! threshold, so it is mapped and unmapped every time) and does not once the policy is applied.
//! One test in its own binary, so that no other test's allocations run between the counts.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use calibra_heap::HeapPolicy;

const BUFFER_BYTES: usize = 48 << 20;
const PAGE_BYTES: usize = 4096;

/// Minor page faults of this process so far: field 10 of `/proc/self/stat` (proc(5)), counted after
/// the command name, which is in parentheses and may hold spaces.
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    let after_name = &stat[stat.rfind(')').expect("command name in /proc/self/stat") + 2..];
    after_name.split(' ').nth(7).and_then(|field| field.parse().ok()).expect("minflt in /proc/self/stat")
}

/// Faults taken by filling a second buffer after a first one of the same size was filled and freed.
fn faults_of_a_reallocated_buffer() -> u64 {
    let first = vec![1u8; BUFFER_BYTES];
    std::hint::black_box(&first);
    drop(first);
    let before = minor_faults();
    let second = vec![2u8; BUFFER_BYTES];
    std::hint::black_box(&second);
    let faults = minor_faults() - before;
    drop(second);
    faults
}

#[test]
fn a_freed_buffer_is_reused_without_faulting_its_pages_in_again() {
    let pages = (BUFFER_BYTES / PAGE_BYTES) as u64;
    let with_defaults = faults_of_a_reallocated_buffer();
    assert!(
        with_defaults >= pages / 2,
        "under glibc's defaults the buffer should be mapped afresh ({pages} pages), but only \
         {with_defaults} faults were counted: the measurement cannot tell the policies apart"
    );
    assert_eq!(HeapPolicy::RetainFreed.apply(), Ok(HeapPolicy::RetainFreed));
    // The first buffer under the policy grows the heap (and faults); the one after it reuses it.
    let retained = faults_of_a_reallocated_buffer();
    eprintln!(
        "page faults refilling {pages} pages: {with_defaults} with glibc's defaults, {retained} retained"
    );
    assert!(
        retained < pages / 16,
        "with freed memory retained, refilling a {BUFFER_BYTES}-byte buffer took {retained} page \
         faults (glibc's defaults: {with_defaults}; at most {} expected)",
        pages / 16
    );
}
