//! The shard's memory for batches: append arenas of the batch cache and DMA read
//! buffers of its segments, recycled through one per-shard [`ArenaPool`].
//!
//! An [`Arena`] is one large buffer that a partition's appended batches are copied into
//! back to back, so that a fetch of several of them is one zero-copy `Bytes`. A
//! [`ReadBlock`] is a buffer lent to one DMA read (glommio's `read_at_aligned_into`,
//! vendored patch), which the kernel fills straight from the segment file; its bytes then
//! become a [`ReadBuf`], which the read-ahead, the fetch and the cache all reference
//! without a copy. Every `Bytes` cut from either keeps the whole buffer alive; when the
//! last of them is dropped (on whatever core the fetch that held it ran), the buffer goes
//! back to its shard's pool instead of to the allocator. In steady state (the cache at
//! its budget, evicting as fast as it inserts) new arenas and read buffers are old ones:
//! no page is faulted in, zeroed by the kernel, or unmapped (with the TLB shootdown that
//! costs every core) per buffer. Buffers are [`BLOCK_ALIGN`]-aligned, as `O_DIRECT` needs.
//! Before that steady state, the pool keeps every idle buffer that fits in what the
//! cache's budget has left (its reserve), and `--cache-prefault` fills that reserve at
//! start-up, so even the first data appended or read lands in memory already faulted in.
//!
//! Writes happen only on the owning shard, only into the part of the buffer that no
//! `Bytes` refers to yet (an arena's free tail, or a read block before
//! [`ReadBlock::freeze`]); every `Bytes` handed out covers bytes that never change again.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// Idle buffers a shard's pool keeps for reuse beyond its reserve (uncounted overhead:
/// at most this many arenas or read-ahead windows, 4 MiB each at most by default).
pub const IDLE_BLOCKS: usize = 16;

thread_local! {
    /// The pool of the shard on this thread (see [`shard_pool`]).
    static SHARD_POOL: Arc<ArenaPool> = ArenaPool::new(IDLE_BLOCKS);
}

/// The pool of the shard running on this thread: its batch cache's append arenas and
/// its segments' DMA read buffers come from it and go back to it, so the memory that an
/// eviction frees becomes the next read's (or arena's) buffer without a page fault.
pub fn shard_pool() -> Arc<ArenaPool> {
    SHARD_POOL.with(Arc::clone)
}

/// Recycled arena buffers of one shard, shared with whichever core drops an arena's
/// last `Bytes`. Keeps idle buffers up to whichever is more: `max_free` of them, or
/// [`ArenaPool::set_reserve`] bytes (its shard cache's budget minus what the cache holds),
/// so that the cache's memory, once faulted in, is reused instead of given back to the
/// allocator: glibc unmaps a thread heap that becomes wholly free whatever its trim
/// threshold, and the kernel zeroes every page faulted in again.
#[derive(Debug)]
pub struct ArenaPool {
    idle: Mutex<Idle>,
    max_free: usize,
    /// Bytes of idle buffers kept even beyond `max_free` of them.
    reserve: AtomicUsize,
    /// Copies of the idle count and bytes, updated under the lock, so that
    /// [`ArenaPool::set_reserve`] takes the lock only when there is something to shed.
    idle_len: AtomicUsize,
    idle_total: AtomicUsize,
    /// Buffers of at least [`MIN_POOLED_READ`] bytes allocated because no idle one fitted
    /// (see [`ArenaPool::allocated`]).
    allocated: AtomicU64,
}

/// The idle buffers, oldest first, and their total capacity in bytes.
#[derive(Debug, Default)]
struct Idle {
    blocks: Vec<Block>,
    bytes: usize,
}

impl Idle {
    fn take(&mut self, i: usize) -> Block {
        let block = self.blocks.remove(i);
        self.bytes -= block.capacity;
        block
    }

    /// Removes the oldest buffers while more than `max_free` are idle and they total
    /// more than `reserve` bytes; returns them, to be freed outside the lock.
    fn shed(&mut self, max_free: usize, reserve: usize) -> Vec<Block> {
        let mut shed = Vec::new();
        while self.blocks.len() > max_free && self.bytes > reserve {
            shed.push(self.take(0));
        }
        shed
    }
}

impl ArenaPool {
    /// A pool keeping up to `max_free` idle buffers (and no reserve).
    pub fn new(max_free: usize) -> Arc<ArenaPool> {
        Arc::new(ArenaPool {
            idle: Mutex::new(Idle::default()),
            max_free,
            reserve: AtomicUsize::new(0),
            idle_len: AtomicUsize::new(0),
            idle_total: AtomicUsize::new(0),
            allocated: AtomicU64::new(0),
        })
    }

    /// Publishes the idle count and bytes (called with the lock held, after a change).
    fn publish(&self, idle: &Idle) {
        self.idle_len.store(idle.blocks.len(), Ordering::Relaxed);
        self.idle_total.store(idle.bytes, Ordering::Relaxed);
    }

    /// Runs `change` on the idle buffers under the lock, publishes their count and
    /// bytes, and frees the buffers `change` returns once the lock is released.
    fn change(&self, change: impl FnOnce(&mut Idle) -> Vec<Block>) {
        let freed = self.idle.lock().map(|mut idle| {
            let freed = change(&mut idle);
            self.publish(&idle);
            freed
        });
        drop(freed);
    }

    /// Idle buffers held now.
    pub fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |i| i.blocks.len())
    }

    /// Total capacity of the idle buffers held now, bytes.
    pub fn idle_bytes(&self) -> usize {
        self.idle.lock().map_or(0, |i| i.bytes)
    }

    /// Buffers of at least [`MIN_POOLED_READ`] bytes (append arenas and read-ahead
    /// windows) this pool allocated since it was made because no idle buffer fitted:
    /// each is memory the kernel faults in and zeroes page by page on the data path
    /// (what `--cache-prefault` is for). Prefaulted buffers are not counted.
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Sets how many bytes of idle buffers the pool keeps even beyond `max_free` of them:
    /// the shard cache's budget minus the bytes it holds, so that idle and cached memory
    /// together stay within the budget (plus `max_free` buffers). The cache calls it
    /// whenever what it holds changes: an atomic store, and the lock only when idle
    /// buffers beyond the new reserve (and beyond `max_free` of them) are to be freed,
    /// as when a fetch's reads, allocated before any of them was cached, are cached.
    pub fn set_reserve(&self, bytes: usize) {
        self.reserve.store(bytes, Ordering::Relaxed);
        if self.idle_len.load(Ordering::Relaxed) > self.max_free
            && self.idle_total.load(Ordering::Relaxed) > bytes
        {
            self.change(|idle| idle.shed(self.max_free, bytes));
        }
    }

    /// Allocates one idle buffer of `capacity` bytes and faults in every page of it now
    /// (the kernel zeroes each page on its first touch), if it fits in the reserve;
    /// false when it does not (the reserve is full: stop). Run at start-up, off the data
    /// path, so that the first `--cache-bytes` of data appended or read are copied into
    /// memory already faulted in instead of paying a page fault and the zeroing of a
    /// fresh page per 4 KiB (2 MiB with transparent huge pages) as they arrive.
    pub fn prefault_one(&self, capacity: usize) -> bool {
        let capacity = capacity.max(1).next_multiple_of(BLOCK_ALIGN);
        let fits = |idle: &Idle| idle.bytes + capacity <= self.reserve.load(Ordering::Relaxed);
        if !self.idle.lock().is_ok_and(|i| fits(&i)) {
            return false;
        }
        let block = Block::new(capacity);
        block.touch();
        let Ok(mut idle) = self.idle.lock() else { return false };
        if !fits(&idle) {
            return false;
        }
        idle.bytes += block.capacity;
        idle.blocks.push(block);
        self.publish(&idle);
        true
    }

    /// A fresh arena of at least `capacity` bytes: an idle buffer of `capacity` to
    /// `2 * capacity` bytes if the pool holds one (a much larger one would make the
    /// arena's uncounted free tail that much larger), else a new allocation.
    pub fn arena(self: &Arc<Self>, capacity: usize, tag: u64) -> Arena {
        let block = self.reuse(capacity).unwrap_or_else(|| self.allocate(capacity));
        let shared = Shared { block: Some(block), pool: Some(self.clone()) };
        Arena { shared: Arc::new(shared), used: 0, tag }
    }

    /// A block for one DMA read of `len` bytes (a multiple of the file's alignment), to
    /// lend to glommio's `read_at_aligned_into`: an idle buffer of `len` to `2 * len`
    /// bytes if the pool holds one, else a new allocation. Reads shorter than
    /// [`MIN_POOLED_READ`] get a buffer of their own that is freed, not pooled.
    pub fn read_block(self: &Arc<Self>, len: usize) -> ReadBlock {
        let pooled = (MIN_POOLED_READ..=MAX_POOLED).contains(&len);
        let reused = if pooled { self.reuse(len) } else { None };
        let block = reused.unwrap_or_else(|| self.allocate(len));
        let pool = pooled.then(|| self.clone());
        ReadBlock { shared: Shared { block: Some(block), pool }, len }
    }

    /// An idle buffer of `len` to `2 * len` bytes, the most recently returned first.
    fn reuse(&self, len: usize) -> Option<Block> {
        let mut idle = self.idle.lock().ok()?;
        let i = idle.blocks.iter().rposition(|b| b.capacity >= len && b.capacity <= 2 * len)?;
        let block = idle.take(i);
        self.publish(&idle);
        Some(block)
    }

    /// A new buffer of `len` bytes, after shedding idle ones beyond the reserve (memory
    /// grows here: what no reuse could take goes back to the allocator first).
    fn allocate(&self, len: usize) -> Block {
        let reserve = self.reserve.load(Ordering::Relaxed).saturating_sub(len);
        self.change(|idle| idle.shed(self.max_free, reserve));
        if len >= MIN_POOLED_READ {
            self.allocated.fetch_add(1, Ordering::Relaxed);
        }
        Block::new(len)
    }

    /// Keeps `block` for reuse (at most [`MAX_POOLED`] bytes); beyond `max_free` idle
    /// buffers and the reserve, the buffers idle longest are freed, so the pool follows
    /// the sizes in use.
    fn give_back(&self, block: Block) {
        if block.capacity > MAX_POOLED {
            return;
        }
        let reserve = self.reserve.load(Ordering::Relaxed);
        self.change(|idle| {
            if self.max_free == 0 && idle.bytes + block.capacity > reserve {
                return vec![block];
            }
            idle.bytes += block.capacity;
            idle.blocks.push(block);
            idle.shed(self.max_free, reserve)
        });
    }
}

/// Reads shorter than this many bytes do not use (or feed) the pool: a small read must
/// not hold on to a large idle buffer, nor fill the pool with small ones.
pub const MIN_POOLED_READ: usize = 64 << 10;

/// Largest buffer the pool keeps, bytes: an append arena or read-ahead window (4 MiB)
/// and the alignment slack of a read; larger reads (one huge batch) are freed after use.
pub const MAX_POOLED: usize = (4 << 20) + (64 << 10);

/// Tag bit of read blocks (see [`ReadBuf::tag`]); arena tags are small counters.
const READ_TAG: u64 = 1 << 63;

/// A block lent to one DMA read (from [`ArenaPool::read_block`]); the kernel writes into
/// its first `len` bytes, then [`ReadBlock::freeze`] turns what it wrote into a
/// [`ReadBuf`].
#[derive(Debug)]
pub struct ReadBlock {
    shared: Shared,
    len: usize,
}

// SAFETY: the block is this value's alone (no `Bytes` is cut from it before `freeze`,
// which consumes the value), so the kernel may write its first `len` bytes (within the
// block's capacity) for as long as the value lives; blocks are `BLOCK_ALIGN`-aligned and
// `len` is what the caller sized for the file's alignment.
unsafe impl glommio::io::ReadSink for ReadBlock {
    fn sink_ptr(&self) -> *mut u8 {
        self.shared.block().ptr.as_ptr()
    }
    fn sink_len(&self) -> usize {
        self.len
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl ReadBlock {
    /// The first `filled` bytes (what the read wrote, at most the lent length), from
    /// now on immutable; the block returns to its pool when the last view is dropped.
    pub fn freeze(self, filled: usize) -> ReadBuf {
        let filled = filled.min(self.len);
        let block_bytes = self.shared.block().capacity;
        let shared = Arc::new(self.shared);
        let ptr = shared.block().ptr.as_ptr();
        let tag = READ_TAG | ptr as u64;
        let data = if filled == 0 {
            Bytes::new()
        } else {
            Bytes::from_owner(Slice { _arena: shared, ptr, len: filled })
        };
        ReadBuf { data, tag, block_bytes }
    }
}

#[cfg(test)]
impl ReadBlock {
    /// Stand-in for a DMA read in tests: copies `src` to the front of the lent memory.
    pub fn write_for_test(&mut self, src: &[u8]) {
        assert!(src.len() <= self.len, "larger than the lent memory");
        // SAFETY: the block is this value's alone and holds at least `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.shared.block().ptr.as_ptr(), src.len())
        }
    }
}

/// Bytes read from a segment file into one [`ReadBlock`] (or none: empty), with that
/// block's identity, so that a cache can join batches of one block without copying and
/// charge the block's memory once. Cheap to clone and slice; `Send`.
#[derive(Clone, Debug, Default)]
pub struct ReadBuf {
    data: Bytes,
    tag: u64,
    block_bytes: usize,
}

impl ReadBuf {
    /// `len` bytes from `at` (clamped to what is there): a view of the same block.
    pub fn slice(&self, at: usize, len: usize) -> ReadBuf {
        let at = at.min(self.data.len());
        let end = at + len.min(self.data.len() - at);
        ReadBuf { data: self.data.slice(at..end), ..self.clone() }
    }

    /// The bytes, as `Bytes` that keep the block alive.
    pub fn bytes(&self) -> &Bytes {
        &self.data
    }

    /// Tag of the block: non-zero, unique among blocks alive at the same time (its
    /// address with the top bit set), never equal to an arena tag; 0 when empty.
    pub fn tag(&self) -> u64 {
        if self.data.is_empty() {
            0
        } else {
            self.tag
        }
    }

    /// Capacity of the whole block in bytes: the memory any view of it keeps alive.
    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }
}

impl std::ops::Deref for ReadBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data
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

    /// Bytes to skip so that the next copy starts at an address congruent to `residue`
    /// modulo [`BLOCK_ALIGN`] (the block itself is aligned): 0 to `BLOCK_ALIGN - 1`.
    pub fn gap_to(&self, residue: usize) -> usize {
        (residue % BLOCK_ALIGN + BLOCK_ALIGN - self.used % BLOCK_ALIGN) % BLOCK_ALIGN
    }

    /// Leaves the next `n` bytes unused (the caller checked [`Arena::room`]): they are
    /// never handed out, so later copies stay immutable slices of their own.
    pub fn skip(&mut self, n: usize) {
        assert!(n <= self.room(), "arena overflow");
        self.used += n;
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
    /// Where the block goes back to; `None`: freed (a small read's block).
    pool: Option<Arc<ArenaPool>>,
}

impl Shared {
    fn block(&self) -> &Block {
        self.block.as_ref().expect("present until drop")
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let (Some(block), Some(pool)) = (self.block.take(), &self.pool) {
            pool.give_back(block);
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

/// Address alignment of every block, bytes: a DMA (`O_DIRECT`) read may go straight into
/// one, which needs the address aligned to the device's logical block (at most 4 KiB).
pub const BLOCK_ALIGN: usize = 4096;

/// An owned, uninitialised heap buffer of `capacity` bytes (a multiple of
/// [`BLOCK_ALIGN`]), aligned to [`BLOCK_ALIGN`].
#[derive(Debug)]
struct Block {
    ptr: NonNull<u8>,
    capacity: usize,
    /// A mapping of its own ([`map`]), else a glibc allocation.
    mapped: bool,
}

// SAFETY: a `Block` owns its allocation exclusively (like a `Vec<u8>`); moving it to
// another thread moves that ownership.
unsafe impl Send for Block {}
// SAFETY: shared access only reads `ptr`/`capacity`; the bytes are written through
// `Arena::push` or a DMA read into a [`ReadBlock`] alone, on ranges no other reference
// covers.
unsafe impl Sync for Block {}

impl Block {
    fn layout(capacity: usize) -> Layout {
        Layout::from_size_align(capacity, BLOCK_ALIGN)
            .expect("block sizes are far below isize::MAX")
    }

    fn new(capacity: usize) -> Block {
        let capacity = capacity.max(1).next_multiple_of(BLOCK_ALIGN);
        if capacity >= MIN_MAPPED {
            if let Some(ptr) = map(capacity) {
                return Block { ptr, capacity, mapped: true };
            }
        }
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc(Block::layout(capacity)) };
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(Block::layout(capacity))
        };
        Block { ptr, capacity, mapped: false }
    }
}

impl Block {
    /// Writes one byte of every 4 KiB page, so that the kernel faults in (and zeroes)
    /// the whole buffer now rather than on first use.
    fn touch(&self) {
        for at in (0..self.capacity).step_by(BLOCK_ALIGN) {
            // SAFETY: `at < capacity`, inside the block's own allocation, which nothing
            // else references while the block is being created.
            unsafe { self.ptr.as_ptr().add(at).write_volatile(0) }
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if self.mapped {
            unmap(self.ptr, self.capacity);
            return;
        }
        // SAFETY: `ptr` came from `alloc` with this very layout and was never freed.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Block::layout(self.capacity)) }
    }
}

/// Buffers of at least this many bytes (every buffer the pool keeps: see
/// [`MIN_POOLED_READ`]) are mappings of their own rather than glibc allocations, so that
/// one the pool sheds goes back to the kernel at once. glibc keeps freed memory for
/// reuse (`main.rs` raises its trim and mmap thresholds for the request buffers), and a
/// pool that shed buffers of one size (a cache of many partitions makes small arenas)
/// while reads needed another left the freed ones resident: a restarted broker with a
/// 1 GiB cache reached a peak RSS of 2.1 GiB reading one topic from disk. The pool does
/// the keeping for these buffers, within the cache's budget.
pub const MIN_MAPPED: usize = MIN_POOLED_READ;

/// Mappings [`map`] may hold at once (process-wide): a quarter of the kernel's default
/// `vm.max_map_count` (65,530), which counts every mapping of the process (and an
/// unmapped block in the middle of merged ones splits them). Beyond it, and when the
/// kernel refuses a mapping, buffers are glibc allocations as before. Reached only with
/// a budget of more than 1 GiB in 64 KiB buffers (many partitions per shard).
pub const MAX_MAPPED: usize = 16_384;

/// Mappings made by [`map`] and not yet unmapped.
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// A fresh anonymous private mapping of `capacity` bytes (a multiple of
/// [`BLOCK_ALIGN`]; page-aligned), or `None` when [`MAX_MAPPED`] are held or the kernel
/// refuses it.
///
/// No `MADV_HUGEPAGE` (the system's transparent huge page policy applies): the pool
/// faults a buffer in once and then keeps it, so huge pages would save page faults only
/// once, and in a virtual machine that gives freed memory back to its host (free page
/// reporting), faulting in huge pages cost 36-40 times more per byte than 4 KiB pages
/// (this machine: 6.8 s against 0.17-0.19 s to touch 512 MiB of fresh memory; 0.065 s
/// against 0.17 s when the host still backs it).
fn map(capacity: usize) -> Option<NonNull<u8>> {
    use nix::sys::mman::{mmap_anonymous, MapFlags, ProtFlags};
    if MAPPED.fetch_add(1, Ordering::Relaxed) >= MAX_MAPPED {
        MAPPED.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
    let len = std::num::NonZeroUsize::new(capacity)?;
    // SAFETY: a new anonymous mapping at an address of the kernel's choice aliases
    // nothing.
    match unsafe { mmap_anonymous(None, len, prot, MapFlags::MAP_PRIVATE) } {
        Ok(ptr) => Some(ptr.cast::<u8>()),
        Err(_) => {
            MAPPED.fetch_sub(1, Ordering::Relaxed);
            None
        }
    }
}

/// Unmaps `[ptr, ptr + len)`, a mapping made by [`map`] that nothing refers to any more.
fn unmap(ptr: NonNull<u8>, len: usize) {
    // SAFETY: the range is a mapping of this module's own, no longer referenced (its
    // block is being dropped).
    match unsafe { nix::sys::mman::munmap(ptr.cast(), len) } {
        Ok(()) => {
            MAPPED.fetch_sub(1, Ordering::Relaxed);
        }
        Err(e) => {
            tracing::error!(error = %e, len, "munmap of a buffer failed; its memory stays mapped")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_adjacent_edited_copies() {
        let pool = ArenaPool::new(4);
        // Capacities are whole multiples of BLOCK_ALIGN.
        let mut arena = pool.arena(1000, 7);
        assert_eq!((arena.room(), arena.tag()), (4096, 7));
        let a = arena.push(&[1, 2, 3], |b| b[0] = 9);
        let b = arena.push(&[4, 5], |_| {});
        assert_eq!((&a[..], &b[..]), (&[9u8, 2, 3][..], &[4u8, 5][..]));
        assert_eq!(b.as_ptr(), a.as_ptr().wrapping_add(3));
        assert_eq!(arena.room(), 4091);
    }

    #[test]
    fn read_blocks_are_aligned_pooled_and_sliced_without_copies() {
        let pool = ArenaPool::new(2);
        let mut block = pool.read_block(128 << 10);
        block.write_for_test(&[7; 10]);
        let ptr = glommio::io::ReadSink::sink_ptr(&block);
        assert_eq!(ptr as usize % BLOCK_ALIGN, 0);
        assert_eq!(glommio::io::ReadSink::sink_len(&block), 128 << 10);
        let buf = block.freeze(10);
        assert_eq!((&buf[..], buf.block_bytes()), (&[7u8; 10][..], 128 << 10));
        assert_eq!(buf.tag(), (1 << 63) | ptr as u64);
        let part = buf.slice(2, 100);
        assert_eq!(
            (part.len(), part.as_ptr(), part.tag()),
            (8, ptr.wrapping_add(2).cast_const(), buf.tag())
        );
        assert_eq!(buf.slice(11, 5).tag(), 0, "an empty view has no block");
        drop(buf);
        assert_eq!(pool.idle(), 0, "a view still holds the block");
        std::thread::spawn(move || drop(part)).join().unwrap();
        assert_eq!(pool.idle(), 1);
        // Reused for a read of 64 KiB up to the whole block, not for a smaller one.
        let small = pool.read_block(32 << 10);
        assert_ne!(glommio::io::ReadSink::sink_ptr(&small), ptr);
        drop(small);
        assert_eq!(pool.idle(), 1, "blocks of reads under MIN_POOLED_READ are freed");
        let again = pool.read_block(64 << 10);
        assert_eq!(glommio::io::ReadSink::sink_ptr(&again), ptr);
        assert_eq!(again.freeze(0).len(), 0);
        assert_eq!(pool.idle(), 1);
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

    #[test]
    fn idle_buffers_within_the_reserve_are_kept_and_shed_when_it_shrinks() {
        let pool = ArenaPool::new(1);
        pool.set_reserve(3 * 8192);
        let blocks: Vec<Arena> = (0..4).map(|t| pool.arena(8192, t)).collect();
        drop(blocks);
        // Three fit in the reserve; the fourth is beyond it and beyond max_free.
        assert_eq!((pool.idle(), pool.idle_bytes()), (3, 3 * 8192));
        // The cache took memory: the next allocation sheds down to the new reserve
        // (less what it allocates), and never below max_free buffers.
        pool.set_reserve(8192);
        let big = pool.arena(64 << 10, 9);
        assert_eq!((pool.idle(), pool.idle_bytes()), (1, 8192));
        pool.set_reserve(0);
        drop(big);
        assert_eq!((pool.idle(), pool.idle_bytes()), (1, 64 << 10), "max_free is kept");
    }

    #[test]
    fn a_smaller_reserve_sheds_idle_buffers_at_once() {
        // Reads allocated while the reserve was large, then cached (the reserve falls):
        // the idle buffers beyond the new reserve go at once, not at the next allocation.
        let pool = ArenaPool::new(1);
        pool.set_reserve(4 * 8192);
        for _ in 0..4 {
            assert!(pool.prefault_one(8192));
        }
        pool.set_reserve(3 * 8192);
        assert_eq!(pool.idle_bytes(), 3 * 8192);
        pool.set_reserve(0);
        assert_eq!((pool.idle(), pool.idle_bytes()), (1, 8192), "max_free is kept");
        pool.set_reserve(8192);
        assert_eq!(pool.idle(), 1);
    }

    #[test]
    fn prefault_fills_the_reserve_with_buffers_arenas_then_reuse() {
        let pool = ArenaPool::new(0);
        assert!(!pool.prefault_one(8192), "no reserve, nothing prefaulted");
        pool.set_reserve(2 * 8192 + 4096);
        assert!(pool.prefault_one(8192));
        assert!(pool.prefault_one(8000), "rounded up to the block alignment");
        assert!(!pool.prefault_one(8192), "a third does not fit");
        assert_eq!((pool.idle(), pool.idle_bytes()), (2, 2 * 8192));
        let mut arena = pool.arena(8192, 1);
        assert_eq!((arena.room(), pool.idle()), (8192, 1));
        let batch = arena.push(&[5; 10], |_| {});
        assert_eq!(&batch[..], &[5u8; 10][..]);
        drop((arena, batch));
        assert_eq!((pool.idle(), pool.idle_bytes()), (2, 2 * 8192));
        // An 8 KiB buffer is too small for a 64 KiB read; the new buffer would not fit
        // in the reserve beside the idle ones, so they are freed first.
        let read = pool.read_block(64 << 10);
        assert_eq!((pool.idle(), pool.idle_bytes()), (0, 0));
        drop(read);
        assert_eq!(pool.idle(), 0, "beyond the reserve, and max_free is 0: freed");
    }

    /// Which pages of `[ptr, ptr + len)` are mapped (mincore answers ENOMEM for a range
    /// with an unmapped page).
    fn mapped(ptr: *const u8, len: usize) -> bool {
        let mut vec = vec![0u8; len.div_ceil(4096)];
        // SAFETY: mincore only reads the page tables of the range and writes `vec`,
        // which holds one byte per page of it.
        unsafe { nix::libc::mincore(ptr as *mut _, len, vec.as_mut_ptr()) == 0 }
    }

    /// Buffers the pool keeps are page-aligned mappings of their own, which hold what is
    /// written into every page (freed with `munmap`, not kept by glibc); smaller ones
    /// come from the allocator.
    #[test]
    fn pooled_sizes_are_mappings_of_their_own() {
        for capacity in [4 << 20, MIN_MAPPED, MAX_POOLED] {
            let block = Block::new(capacity);
            let ptr = block.ptr.as_ptr();
            assert_eq!((ptr as usize % BLOCK_ALIGN, block.capacity), (0, capacity), "{capacity}");
            assert!(block.mapped, "{capacity}");
            block.touch();
            for at in (0..capacity).step_by(4096) {
                // SAFETY: inside the block, which this test alone uses.
                unsafe { ptr.add(at).write(at as u8 ^ 0x5A) };
            }
            for at in (0..capacity).step_by(4096) {
                // SAFETY: as above.
                assert_eq!(unsafe { ptr.add(at).read() }, at as u8 ^ 0x5A);
            }
            assert!(mapped(ptr, capacity));
        }
        let small = Block::new(MIN_MAPPED - 4096);
        assert_eq!((small.ptr.as_ptr() as usize % BLOCK_ALIGN, small.mapped), (0, false));
    }
}
