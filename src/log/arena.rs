//! Append arenas of the batch cache, recycled through a per-shard [`ArenaPool`].
//!
//! An [`Arena`] is one large buffer that a partition's appended (or read-in) batches are
//! copied into back to back, so that a fetch of several of them is one zero-copy `Bytes`.
//! Each batch comes out as a `Bytes` that keeps the whole arena alive; when the last of
//! them is dropped (on whatever core the fetch that held it ran), the buffer goes back to
//! its shard's pool instead of to the allocator. In steady state (the cache at its
//! budget, evicting as fast as it inserts) new arenas are old ones: no page is faulted
//! in, zeroed by the kernel, or unmapped (with the TLB shootdown that costs every core)
//! per arena.
//!
//! Writes happen only on the owning shard, only into the part of the buffer that no
//! `Bytes` refers to yet; every `Bytes` handed out covers bytes that never change again.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// Recycled arena buffers of one shard, shared with whichever core drops an arena's
/// last `Bytes`. Holds at most `max_free` idle buffers (the overhead beyond the cache
/// budget: `max_free` times the arena size).
#[derive(Debug)]
pub struct ArenaPool {
    free: Mutex<Vec<Block>>,
    max_free: usize,
}

impl ArenaPool {
    /// A pool keeping up to `max_free` idle buffers.
    pub fn new(max_free: usize) -> Arc<ArenaPool> {
        Arc::new(ArenaPool { free: Mutex::new(Vec::new()), max_free })
    }

    /// Idle buffers held now.
    pub fn idle(&self) -> usize {
        self.free.lock().map_or(0, |f| f.len())
    }

    /// A fresh arena of at least `capacity` bytes: an idle buffer if one is that large,
    /// else a new allocation.
    pub fn arena(self: &Arc<Self>, capacity: usize, tag: u64) -> Arena {
        let reused = self.free.lock().ok().and_then(|mut free| {
            let i = free.iter().rposition(|b| b.capacity >= capacity)?;
            Some(free.swap_remove(i))
        });
        let block = reused.unwrap_or_else(|| Block::new(capacity));
        Arena { shared: Arc::new(Shared { block: Some(block), pool: self.clone() }), used: 0, tag }
    }

    fn give_back(&self, block: Block) {
        if let Ok(mut free) = self.free.lock() {
            if free.len() < self.max_free {
                free.push(block);
            }
        }
    }
}

/// One partition's current arena: bytes `[0, used)` are handed out, the rest is free.
/// Lives on the owning shard.
#[derive(Debug)]
pub struct Arena {
    shared: Arc<Shared>,
    used: usize,
    tag: u64,
}

impl Arena {
    /// Bytes still free.
    pub fn room(&self) -> usize {
        self.shared.block().capacity - self.used
    }

    /// Allocation tag given at creation (see `CachedBatch::alloc`).
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// Copies `src` into the arena (the caller checked [`Arena::room`]), lets `edit`
    /// change the copy, and returns it as `Bytes` that keep the arena alive. Consecutive
    /// copies are adjacent in memory.
    pub fn push(&mut self, src: &[u8], edit: impl FnOnce(&mut [u8])) -> Bytes {
        assert!(src.len() <= self.room(), "arena overflow");
        let block = self.shared.block();
        // SAFETY: `[used, used + len)` lies inside the block's allocation (checked above)
        // and no `Bytes` refers to it yet (every slice handed out ends at or before
        // `used`), so this is the only reference to that memory; `u8` has no invalid
        // values, and the copy initialises every byte before the slice is formed.
        let dst = unsafe {
            let dst = block.ptr.as_ptr().add(self.used);
            std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
            std::slice::from_raw_parts_mut(dst, src.len())
        };
        edit(dst);
        self.used += src.len();
        let slice = Slice { _arena: self.shared.clone(), ptr: dst.as_ptr(), len: dst.len() };
        Bytes::from_owner(slice)
    }
}

/// The buffer shared by an arena and every `Bytes` cut from it; returns the buffer to
/// the pool when the last of them is dropped.
#[derive(Debug)]
struct Shared {
    block: Option<Block>,
    pool: Arc<ArenaPool>,
}

impl Shared {
    fn block(&self) -> &Block {
        self.block.as_ref().expect("present until drop")
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.pool.give_back(block);
        }
    }
}

/// A handed-out range of an arena (immutable from now on).
struct Slice {
    _arena: Arc<Shared>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the range is never written again (see `Arena::push`) and the allocation is
// kept alive by `_arena`; reading it from any thread is sound.
unsafe impl Send for Slice {}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: initialised by `Arena::push`, alive while `_arena` is, and immutable.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// An owned, uninitialised heap buffer of `capacity` bytes.
#[derive(Debug)]
struct Block {
    ptr: NonNull<u8>,
    capacity: usize,
}

// SAFETY: a `Block` owns its allocation exclusively (like a `Vec<u8>`); moving it to
// another thread moves that ownership.
unsafe impl Send for Block {}
// SAFETY: shared access only reads `ptr`/`capacity`; the bytes are written through
// `Arena::push` alone, on ranges no other reference covers.
unsafe impl Sync for Block {}

impl Block {
    fn new(capacity: usize) -> Block {
        let mut v = std::mem::ManuallyDrop::new(Vec::<u8>::with_capacity(capacity));
        let capacity = v.capacity();
        let ptr = NonNull::new(v.as_mut_ptr()).expect("Vec pointers are non-null");
        advise_huge_pages(ptr, capacity);
        Block { ptr, capacity }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`capacity` came from a `Vec<u8>` that was never freed; length 0
        // (u8 needs no drop).
        unsafe { drop(Vec::from_raw_parts(self.ptr.as_ptr(), 0, self.capacity)) }
    }
}

/// Asks the kernel to back the 2 MiB-aligned part of a new buffer with transparent huge
/// pages: an arena is written once, front to back, so this turns 512 page faults per
/// 2 MiB into one. Only a hint (`MADV_HUGEPAGE`); errors are ignored.
fn advise_huge_pages(ptr: NonNull<u8>, capacity: usize) {
    const HUGE: usize = 2 << 20;
    let start = ptr.as_ptr() as usize;
    let (a, b) = (start.next_multiple_of(HUGE), (start + capacity) / HUGE * HUGE);
    if b <= a {
        return;
    }
    let Some(addr) = NonNull::new(a as *mut std::ffi::c_void) else { return };
    // SAFETY: [a, b) lies inside the buffer's own allocation; MADV_HUGEPAGE changes no
    // contents and no mapping, only how future faults are served.
    let _ =
        unsafe { nix::sys::mman::madvise(addr, b - a, nix::sys::mman::MmapAdvise::MADV_HUGEPAGE) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_adjacent_edited_copies() {
        let pool = ArenaPool::new(4);
        let mut arena = pool.arena(1024, 7);
        assert_eq!((arena.room(), arena.tag()), (1024, 7));
        let a = arena.push(&[1, 2, 3], |b| b[0] = 9);
        let b = arena.push(&[4, 5], |_| {});
        assert_eq!((&a[..], &b[..]), (&[9u8, 2, 3][..], &[4u8, 5][..]));
        assert_eq!(b.as_ptr(), a.as_ptr().wrapping_add(3));
        assert_eq!(arena.room(), 1019);
    }

    #[test]
    fn the_buffer_returns_to_the_pool_when_its_last_bytes_drop() {
        let pool = ArenaPool::new(1);
        let mut arena = pool.arena(4096, 1);
        let kept = arena.push(&[1; 100], |_| {});
        let first = kept.as_ptr();
        drop(arena);
        assert_eq!(pool.idle(), 0, "a cached batch still refers to it");
        // Dropped on another thread, as a fetch served by another core would.
        std::thread::spawn(move || drop(kept)).join().unwrap();
        assert_eq!(pool.idle(), 1);
        // The next arena reuses that buffer; a larger request does not.
        let mut again = pool.arena(4096, 2);
        assert_eq!(pool.idle(), 0);
        assert_eq!(again.push(&[2; 10], |_| {}).as_ptr(), first);
        let larger = pool.arena(8192, 3);
        assert!(larger.room() >= 8192);
        drop((again, larger));
        // Only `max_free` idle buffers are kept.
        assert_eq!(pool.idle(), 1);
    }
}
