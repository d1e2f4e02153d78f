//! Handing freed memory back to the system after a build.
//!
//! A build or rebuild allocates and frees hundreds of megabytes of temporaries
//! (sort keys, the old orders, walker threads' listings). glibc keeps what was
//! freed in its arenas for reuse, so a server that has finished building holds
//! tens of megabytes it will not use again (measured: 42 MiB at 1M entries).
//! `malloc_trim` returns the free pages of every arena. Other allocators return
//! memory by themselves, so elsewhere this does nothing.

/// Return freed memory to the system (glibc only).
pub(crate) fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes no pointer and is
    // thread-safe (it locks each arena it trims).
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Have glibc serve large allocations (the index's arrays) with their own
/// mappings from the first byte, instead of letting its threshold drift up
/// to 32 MiB: such arrays then grow with `mremap` and go back to the system
/// whole when freed, leaving no holes in the heap. Process-wide; the binaries
/// call it once at start.
pub fn map_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's tuning.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}
