//! The shard's batch cache: recent (and recently read) record batches of every partition
//! the shard owns, as `Bytes`, within one byte budget per shard (`--cache-bytes` split
//! over the shards), so fetches of anything it holds never touch the disk and reference
//! the cached memory instead of copying it.
//!
//! Lives on one shard (one glommio executor) only: a [`ShardCache`] is shared by that
//! shard's partition logs as a [`SharedCache`] (`Rc<RefCell<_>>`); every method is
//! synchronous, so no borrow is ever held across an `.await`.
//!
//! ## Eviction
//! LRU between partitions, oldest first within one: every insert or read "touches" its
//! partition; while the shard holds more than its budget, the least recently touched
//! partition that holds anything loses its lowest-offset batch. A partition that is
//! written or read keeps its data while idle partitions give theirs up, and partitions
//! written at the same pace share the budget evenly (each eviction goes to whichever of
//! them was touched longest ago). A per-partition cap (`--partition-cache-bytes`) can
//! bound one partition's share further.
//!
//! ## Accounting
//! The cache counts the stored length of every appended batch it holds, and for batches
//! read from disk (views of their DMA read buffer, never copied) the whole read buffer,
//! once, while any of its batches stays cached. The invariant is `used() <= budget()`
//! after every call (a batch, or read buffer, larger than the budget or than the
//! partition cap, is not cached). Memory not counted (the overhead): the unused tail of
//! each partition's current append arena (see [`ShardCache::copy_in`], at most
//! [`ShardCache::arena_bytes`] per partition), parts of arenas kept alive by a batch
//! still cached while their other batches were evicted, and the idle buffers the shard's
//! pool keeps for reuse beyond what the budget has left (at most [`IDLE_ARENAS`]; see
//! [`super::arena`]). Within the budget, the pool keeps every buffer the cache gives
//! up, and `--cache-prefault` fills it at start-up, so the budget's memory is faulted in
//! once and then recycled: the cache tells the pool, after every change, how many bytes
//! it has left ([`ArenaPool::set_reserve`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::arena::{Arena, ArenaPool, ReadBuf, BLOCK_ALIGN};

use crate::protocol::batch::BatchIter;

/// Largest append arena: appended batches are copied into arenas of up to this many
/// bytes so that consecutive batches are adjacent in memory and a fetch of several of
/// them is one zero-copy `Bytes`.
pub const MAX_ARENA_BYTES: usize = 4 << 20;
// A read-ahead window's DMA read is the size of the largest arena, so that the pool
// recycles one as the other (and the prefault serves both).
const _: () = assert!(MAX_ARENA_BYTES == super::segment::READ_AHEAD);
/// Smallest append arena, bytes.
pub const MIN_ARENA_BYTES: usize = 64 << 10;
/// Idle buffers a shard keeps for reuse (uncounted overhead: at most this many times
/// [`MAX_ARENA_BYTES`]); the pool is shared with the shard's DMA reads.
pub const IDLE_ARENAS: usize = super::arena::IDLE_BLOCKS;

/// A read whose batches are not all adjacent in memory (it spans two arenas or read
/// buffers) is copied into one buffer when it totals at most this many bytes; a longer
/// one whose first batch is in an arena or read buffer is cut at the first break and
/// stays zero-copy, however short the part before the break (the consumer's next fetch
/// starts there, and a fetch that leaves data behind answers at once). Copying instead
/// cost 7-11% of the broker's CPU in a sequential consume: a 1 MiB fetch crosses an
/// arena boundary about once per 4 MiB. A first batch outside any arena (larger than
/// half an arena, so every batch is its own allocation) is cut off only when it is at
/// least this long and at least half the read, else the read is copied, so that a read
/// of several such batches is not cut to one.
pub const MIN_CUT_BYTES: usize = 64 << 10;

/// A shard's cache as its partition logs share it (same core only).
pub type SharedCache = Rc<RefCell<ShardCache>>;

/// Handle of one partition's part of a [`ShardCache`] (from [`ShardCache::register`]).
pub type PartitionId = u64;

/// One cached batch: its assigned offsets and its stored bytes.
#[derive(Debug, Clone)]
pub struct CachedBatch {
    /// Base offset (as rewritten into the batch).
    pub base_offset: i64,
    /// Last offset.
    pub last_offset: i64,
    /// The whole stored batch.
    pub data: Bytes,
    /// Tag of the allocation `data` points into (batches with the same tag that are
    /// adjacent in memory can be joined without copying); 0 = not joinable.
    pub alloc: u64,
}

/// One partition's cached batches, by base offset.
#[derive(Debug, Default)]
struct PartCache {
    batches: BTreeMap<i64, CachedBatch>,
    bytes: usize,
    /// Tick of the last insert or read (key in the LRU set while `bytes > 0`).
    last_used: u64,
    /// The current append arena (its unused rest takes the next batches).
    arena: Option<Arena>,
}

/// Byte-budgeted batch cache of one shard; see the module doc. Lives on one shard.
#[derive(Debug)]
pub struct ShardCache {
    budget: usize,
    partition_cap: usize,
    used: usize,
    tick: u64,
    next_id: PartitionId,
    next_tag: u64,
    parts: HashMap<PartitionId, PartCache>,
    /// (last used tick, partition) of every partition holding bytes, oldest first.
    lru: BTreeSet<(u64, PartitionId)>,
    /// Where arenas come from and go back to.
    pool: Arc<ArenaPool>,
    /// This is the shard's cache (from [`ShardCache::for_shard`]): it alone tells the
    /// pool how much the budget has left. A log's private cache (internal logs) shares
    /// the thread's pool but leaves its reserve alone.
    owns_reserve: bool,
    /// Read blocks that cached batches point into, by tag: (the block's bytes, charged
    /// once while any of its batches is cached; how many of its batches are cached; the
    /// partition charged, the only one a block's batches belong to).
    blocks: HashMap<u64, (usize, usize, PartitionId)>,
}

impl ShardCache {
    /// An empty cache of at most `budget` bytes, at most `partition_cap` of them for one
    /// partition (`usize::MAX`: no cap). A budget of 0 disables caching.
    pub fn new(budget: usize, partition_cap: usize) -> Self {
        let pool = super::arena::shard_pool();
        ShardCache {
            budget,
            partition_cap,
            used: 0,
            tick: 0,
            next_id: 1,
            next_tag: 1,
            parts: HashMap::new(),
            lru: BTreeSet::new(),
            pool,
            owns_reserve: false,
            blocks: HashMap::new(),
        }
    }

    /// The shard's own cache: as [`ShardCache::new`], and it keeps its pool's reserve
    /// ([`ArenaPool::set_reserve`]) at what its budget has left, so the pool keeps (and
    /// `--cache-prefault` fills) that much idle memory for it. One per shard: a second
    /// one on the same thread would fight over the reserve.
    pub fn for_shard(budget: usize, partition_cap: usize) -> SharedCache {
        let mut cache = ShardCache::new(budget, partition_cap);
        cache.owns_reserve = true;
        cache.note_used();
        Rc::new(RefCell::new(cache))
    }

    /// Tells the pool what the budget has left, if this is the shard's cache: nothing
    /// when no data partition can be cached (a budget or partition cap of 0). Sheds
    /// idle buffers beyond it (see [`ArenaPool::set_reserve`]).
    fn note_used(&self) {
        if self.owns_reserve {
            let left = if self.partition_cap == 0 { 0 } else { self.budget - self.used };
            self.pool.set_reserve(left);
        }
    }

    /// [`ShardCache::new`] wrapped for sharing between the shard's logs.
    pub fn shared(budget: usize, partition_cap: usize) -> SharedCache {
        Rc::new(RefCell::new(ShardCache::new(budget, partition_cap)))
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes of batches cached over all partitions (always `<= budget()`).
    pub fn used(&self) -> usize {
        self.used
    }

    /// Bytes cached for one partition.
    pub fn partition_bytes(&self, id: PartitionId) -> usize {
        self.parts.get(&id).map_or(0, |p| p.bytes)
    }

    /// Size of the append arenas: an eighth of the budget spread over the registered
    /// partitions, within [`MIN_ARENA_BYTES`]..=[`MAX_ARENA_BYTES`] (bounds the uncounted
    /// overhead to about `budget / 8`).
    pub fn arena_bytes(&self) -> usize {
        (self.budget / 8 / self.parts.len().max(1)).clamp(MIN_ARENA_BYTES, MAX_ARENA_BYTES)
    }

    /// Size of the buffers `--cache-prefault` faults in: a read-ahead window's
    /// ([`MAX_ARENA_BYTES`], the size of [`crate::log::segment::READ_AHEAD`]'s DMA reads)
    /// when the budget holds one, else [`ShardCache::arena_bytes`]. Reads from disk then
    /// reuse them whatever the arena size: with many partitions per shard arenas are
    /// small (a restarted broker with 1,000 partitions: 128 KiB), and buffers prefaulted
    /// at that size fit no read, so each 4 MiB read faulted in fresh memory while the
    /// pool unmapped prefaulted buffers to stay within the budget (a third of the
    /// broker's CPU in such a cold consume). Small arenas then start in fresh memory, as
    /// on a broker started without partitions.
    pub fn prefault_buffer_bytes(&self) -> usize {
        if self.budget >= MAX_ARENA_BYTES {
            MAX_ARENA_BYTES
        } else {
            self.arena_bytes()
        }
    }

    /// Adds an (empty) partition and returns its handle.
    pub fn register(&mut self) -> PartitionId {
        let id = self.next_id;
        self.next_id += 1;
        self.parts.insert(id, PartCache::default());
        id
    }

    /// Drops a partition and everything it caches (its log closed or deleted).
    pub fn unregister(&mut self, id: PartitionId) {
        self.clear(id);
        self.parts.remove(&id);
    }

    /// Drops partition `id`'s batches that end below `offset` (retention moved its log
    /// start offset past them).
    pub fn evict_below(&mut self, id: PartitionId, offset: i64) {
        while let Some(p) = self.parts.get(&id) {
            match p.batches.first_key_value() {
                Some((_, b)) if b.last_offset < offset => self.evict_one(id),
                _ => break,
            }
        }
    }

    /// Drops partition `id`'s batches that overlap offsets `[from, to)` (the log
    /// cleaner rewrote that range).
    pub fn evict_range(&mut self, id: PartitionId, from: i64, to: i64) {
        let Some(p) = self.parts.get_mut(&id) else { return };
        let doomed: Vec<i64> =
            p.batches.range(..to).filter(|(_, b)| b.last_offset >= from).map(|(k, _)| *k).collect();
        for k in doomed {
            self.evict(id, k);
        }
    }

    /// Drops everything one partition caches (it stays registered).
    pub fn clear(&mut self, id: PartitionId) {
        while self.parts.get(&id).is_some_and(|p| !p.batches.is_empty()) {
            self.evict_one(id);
        }
    }

    fn tag(&mut self) -> u64 {
        let t = self.next_tag;
        self.next_tag += 1;
        t
    }

    /// Copies a batch being appended to partition `id` into the partition's append
    /// arena, so consecutive batches are adjacent in memory, lets `edit` change the copy
    /// (assign offsets), and returns it (to be passed to [`ShardCache::insert`]) with its
    /// allocation tag. Arenas come from the shard's [`ArenaPool`]. With caching disabled,
    /// or for a batch larger than half an arena, this is a plain copy (tag 0).
    pub fn copy_in(
        &mut self,
        id: PartitionId,
        src: &[u8],
        edit: impl FnOnce(&mut [u8]),
    ) -> (Bytes, u64) {
        self.copy_in_at(id, src, None, edit)
    }

    /// [`ShardCache::copy_in`] for a batch that will lie at `file_pos` in its segment
    /// file: in an arena, the copy starts at an address congruent to `file_pos` modulo
    /// [`BLOCK_ALIGN`] (up to `BLOCK_ALIGN - 1` bytes are skipped when it would not), so
    /// that the log's writer can DMA whole blocks of consecutive batches straight from
    /// the arena (see `PartitionLog::write_group`). `None`: placed right after the
    /// previous copy.
    pub fn copy_in_at(
        &mut self,
        id: PartitionId,
        src: &[u8],
        file_pos: Option<u64>,
        edit: impl FnOnce(&mut [u8]),
    ) -> (Bytes, u64) {
        let arena_bytes = self.arena_bytes();
        let room = match self.parts.get(&id) {
            Some(p)
                if self.budget > 0
                    && src.len() <= arena_bytes / 2
                    && src.len() <= self.partition_cap =>
            {
                p.arena.as_ref().map_or(0, Arena::room)
            }
            _ => {
                let mut copy = BytesMut::from(src);
                edit(&mut copy);
                return (copy.freeze(), 0);
            }
        };
        let residue = file_pos.map(|p| (p % BLOCK_ALIGN as u64) as usize);
        let gap = |a: &Arena| residue.map_or(0, |r| a.gap_to(r));
        let current = self.parts.get(&id).and_then(|p| p.arena.as_ref());
        if room < current.map_or(0, gap) + src.len() {
            let tag = self.tag();
            let arena = self.pool.arena(arena_bytes, tag);
            self.parts.get_mut(&id).expect("checked above").arena = Some(arena);
        }
        let arena = self.parts.get_mut(&id).and_then(|p| p.arena.as_mut()).expect("set above");
        // Room for both: checked above, or a new arena (a batch is at most half of one).
        arena.skip(gap(arena));
        (arena.push(src, edit), arena.tag())
    }

    /// Idle arena buffers the shard's pool holds (beyond [`IDLE_ARENAS`] of them, only
    /// as many bytes as the budget has left).
    pub fn idle_arenas(&self) -> usize {
        self.pool.idle()
    }

    /// Total bytes of the idle buffers the shard's pool holds.
    pub fn idle_bytes(&self) -> usize {
        self.pool.idle_bytes()
    }

    /// Buffers the shard's pool allocated because no idle one fitted (see
    /// [`ArenaPool::allocated`]).
    pub fn allocated_buffers(&self) -> u64 {
        self.pool.allocated()
    }

    /// Faults in one more buffer of [`ShardCache::prefault_buffer_bytes`] for the pool to
    /// hold until an arena or a read needs it (see [`ArenaPool::prefault_one`]); false
    /// when this is not the shard's cache ([`ShardCache::for_shard`]), caching is off
    /// (a budget or partition cap of 0) or the idle buffers already fill what the budget
    /// has left.
    pub fn prefault_one(&self) -> bool {
        self.may_prefault() && self.pool.prefault_one(self.prefault_buffer_bytes())
    }

    /// Whether memory may be faulted in ahead of use for this cache: it is the shard's
    /// ([`ShardCache::for_shard`]) and can hold data (budget and partition cap above 0).
    pub fn may_prefault(&self) -> bool {
        self.owns_reserve && self.budget > 0 && self.partition_cap > 0
    }

    fn touch(&mut self, id: PartitionId) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(p) = self.parts.get_mut(&id) {
            if p.bytes > 0 {
                self.lru.remove(&(p.last_used, id));
                self.lru.insert((tick, id));
            }
            p.last_used = tick;
        }
    }

    /// Caches one batch of partition `id` (unless caching is off, the batch is larger
    /// than the budget or the partition cap, or a batch with the same base offset is
    /// cached), touches the partition and evicts down to the budget.
    pub fn insert(&mut self, id: PartitionId, b: CachedBatch) {
        self.insert_charged(id, b, None);
    }

    /// [`ShardCache::insert`] of a batch that points into a read block of `block`
    /// bytes (`Some`, tag `b.alloc`): the first such batch is charged the whole block,
    /// the others nothing, and the charge is given back when the block's last batch
    /// goes (see [`ShardCache::charge_out`]). `None`: charged its own length.
    fn insert_charged(&mut self, id: PartitionId, b: CachedBatch, block: Option<usize>) {
        let len = b.data.len();
        let charge = block.unwrap_or(len);
        if charge > self.budget || charge > self.partition_cap {
            return;
        }
        self.touch(id);
        let Some(p) = self.parts.get(&id) else { return };
        if p.batches.contains_key(&b.base_offset) {
            return;
        }
        let charge = match block {
            Some(bytes) => {
                let e = self.blocks.entry(b.alloc).or_insert((bytes, 0, id));
                debug_assert_eq!(e.2, id, "a read block holds one partition's batches");
                e.1 += 1;
                if e.1 == 1 {
                    e.0
                } else {
                    0
                }
            }
            None => len,
        };
        let p = self.parts.get_mut(&id).expect("checked above");
        if p.bytes == 0 && charge > 0 {
            self.lru.insert((p.last_used, id));
        }
        p.bytes += charge;
        self.used += charge;
        p.batches.insert(b.base_offset, b);
        while self.parts[&id].bytes > self.partition_cap {
            self.evict_one(id);
        }
        while self.used > self.budget {
            let Some(&(_, victim)) = self.lru.first() else { break };
            self.evict_one(victim);
        }
        self.note_used();
    }

    /// Caches the whole batches of `parts` (consecutive bytes read from partition `id`'s
    /// log: views of DMA read buffers), as [`ShardCache::insert`] does, and returns them
    /// as one `Bytes` for the fetch that read them; a trailing partial batch is ignored.
    /// Nothing is copied: each batch is cached as a view of its read buffer (batches
    /// already cached are reused), and that buffer is charged to the budget whole, once,
    /// while any of its batches stays cached; only a buffer larger than the budget or the
    /// partition cap has its batches copied into the partition's arena instead. The result is zero-copy when the batches
    /// are adjacent (see [`ShardCache::read`] for how a break is handled). `None` when
    /// caching is off: the caller serves the parts itself.
    pub fn insert_read<'a>(
        &mut self,
        id: PartitionId,
        parts: impl IntoIterator<Item = &'a ReadBuf>,
    ) -> Option<Bytes> {
        if self.budget == 0 || !self.parts.contains_key(&id) {
            return None;
        }
        let mut batches = Vec::new();
        let mut total = 0;
        for part in parts {
            let data = part.bytes();
            for item in BatchIter::new(data) {
                let Ok((at, h)) = item else { break };
                let end = at + h.total_size();
                if end > data.len() {
                    break;
                }
                let cached = self.parts.get(&id).and_then(|p| p.batches.get(&h.base_offset));
                let b = match cached {
                    Some(b) if b.data.len() == end - at => b.clone(),
                    _ => {
                        if part.block_bytes() <= self.budget.min(self.partition_cap) {
                            let b = CachedBatch {
                                base_offset: h.base_offset,
                                last_offset: h.last_offset(),
                                data: data.slice(at..end),
                                alloc: part.tag(),
                            };
                            self.insert_charged(id, b.clone(), Some(part.block_bytes()));
                            b
                        } else {
                            // The buffer could never be cached whole (a small budget or
                            // partition cap): cache a copy of the batch instead.
                            let (copy, alloc) = self.copy_in(id, &data[at..end], |_| {});
                            let b = CachedBatch {
                                base_offset: h.base_offset,
                                last_offset: h.last_offset(),
                                data: copy,
                                alloc,
                            };
                            self.insert(id, b.clone());
                            b
                        }
                    }
                };
                total += b.data.len();
                batches.push(b);
            }
        }
        let refs: Vec<&CachedBatch> = batches.iter().collect();
        Some(if refs.is_empty() { Bytes::new() } else { join(&refs, total) })
    }

    /// Bytes the budget gets back when batch `b` leaves the cache: its length, or for
    /// a read block's last cached batch the whole block (0 for its others).
    fn charge_out(&mut self, b: &CachedBatch) -> usize {
        let Some(e) = self.blocks.get_mut(&b.alloc) else { return b.data.len() };
        e.1 -= 1;
        if e.1 > 0 {
            return 0;
        }
        let bytes = e.0;
        self.blocks.remove(&b.alloc);
        bytes
    }

    /// Drops partition `id`'s batch with base offset `base`, if cached.
    fn evict(&mut self, id: PartitionId, base: i64) {
        let Some(old) = self.parts.get_mut(&id).and_then(|p| p.batches.remove(&base)) else {
            return;
        };
        let charge = self.charge_out(&old);
        let p = self.parts.get_mut(&id).expect("just removed from it");
        p.bytes -= charge;
        self.used -= charge;
        if p.bytes == 0 {
            self.lru.remove(&(p.last_used, id));
        }
        self.note_used();
    }

    /// Evicts partition `id`'s lowest-offset batch.
    fn evict_one(&mut self, id: PartitionId) {
        let Some(base) =
            self.parts.get(&id).and_then(|p| p.batches.first_key_value()).map(|(k, _)| *k)
        else {
            return;
        };
        self.evict(id, base);
    }

    /// Batches of partition `id` starting with the cached one containing `offset`,
    /// consecutive in offset, all with `last_offset < limit` (the high watermark),
    /// totalling at most `max_bytes` but at least one batch; touches the partition.
    /// `None` when no cached batch contains `offset` (or it is not below `limit`).
    /// The result is one zero-copy `Bytes` when the batches are adjacent in memory; when
    /// they are not, it is cut at the first break or copied, see [`MIN_CUT_BYTES`].
    pub fn read(
        &mut self,
        id: PartitionId,
        offset: i64,
        max_bytes: usize,
        limit: i64,
    ) -> Option<Bytes> {
        let p = self.parts.get(&id)?;
        let (_, first) = p.batches.range(..=offset).next_back()?;
        if first.last_offset < offset || first.last_offset >= limit {
            return None;
        }
        let mut out: Vec<&CachedBatch> = vec![first];
        let mut total = first.data.len();
        let mut next = first.last_offset + 1;
        for (_, b) in p.batches.range(first.base_offset + 1..) {
            if b.base_offset != next || b.last_offset >= limit || total + b.data.len() > max_bytes {
                break;
            }
            total += b.data.len();
            next = b.last_offset + 1;
            out.push(b);
        }
        let result = join(&out, total);
        self.touch(id);
        Some(result)
    }
}

/// Several adjacent `Bytes` of one allocation seen as one slice; keeps them alive.
struct Joined {
    _parts: Vec<Bytes>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the pointer refers into memory owned by `_parts` (immutable `Bytes`, which
// are Send and Sync); the struct only reads it.
unsafe impl Send for Joined {}

impl AsRef<[u8]> for Joined {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `join` checked that the parts are consecutive ranges of one
        // allocation (same tag, each starting where the previous ends), all
        // initialized and kept alive by `_parts`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// The batches as one `Bytes` (see [`ShardCache::read`]).
fn join(batches: &[&CachedBatch], total: usize) -> Bytes {
    if batches.len() == 1 {
        return batches[0].data.clone();
    }
    // Longest prefix of batches adjacent in one allocation.
    let mut n = 1;
    let mut len = batches[0].data.len();
    while n < batches.len() {
        let (a, b) = (batches[n - 1], batches[n]);
        let adjacent = a.alloc != 0
            && a.alloc == b.alloc
            && a.data.as_ptr().wrapping_add(a.data.len()) == b.data.as_ptr();
        if !adjacent {
            break;
        }
        len += b.data.len();
        n += 1;
    }
    let cut = if batches[0].alloc != 0 {
        total > MIN_CUT_BYTES
    } else {
        len >= MIN_CUT_BYTES && len * 2 >= total
    };
    if n < batches.len() && !cut {
        let mut out = BytesMut::with_capacity(total);
        for b in batches {
            out.extend_from_slice(&b.data);
        }
        return out.freeze();
    }
    if n == 1 {
        return batches[0].data.clone();
    }
    let parts: Vec<Bytes> = batches[..n].iter().map(|b| b.data.clone()).collect();
    let ptr = parts[0].as_ptr();
    Bytes::from_owner(Joined { _parts: parts, ptr, len })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cb(base: i64, n: i64, len: usize) -> CachedBatch {
        CachedBatch {
            base_offset: base,
            last_offset: base + n - 1,
            data: Bytes::from(vec![base as u8; len]),
            alloc: 0,
        }
    }

    /// `bytes` as if read from disk into a block of `block` bytes of `pool`.
    fn disk_read(pool: &Arc<ArenaPool>, bytes: &[u8], block: usize) -> ReadBuf {
        let mut b = pool.read_block(block);
        b.write_for_test(bytes);
        b.freeze(bytes.len())
    }

    #[test]
    fn a_disk_read_is_cached_without_a_copy_and_its_block_charged_once() {
        use crate::protocol::batch::testing::{build_batch, BatchSpec};
        let spec =
            |base| BatchSpec { base_offset: base, records: 3, value_len: 10, ..Default::default() };
        let (a, b) = (build_batch(&spec(0)), build_batch(&spec(3)));
        let pool = ArenaPool::new(4);
        // A read-ahead window of 1 MiB holding two batches.
        let read = disk_read(&pool, &[a.clone(), b.clone()].concat(), 1 << 20);
        let mut c = ShardCache::new(4 << 20, usize::MAX);
        let p = c.register();
        let first = read.slice(0, a.len());
        let served = c.insert_read(p, [&first]).expect("caching is on");
        assert_eq!((&served[..], served.as_ptr()), (&a[..], read.as_ptr()));
        assert_eq!(c.used(), 1 << 20, "the whole block is charged");
        // The next fetch's batch from the same block costs nothing more, and a cached
        // read of both is one view of the block.
        c.insert_read(p, [&read.slice(a.len(), b.len())]);
        c.insert_read(p, [&first]);
        assert_eq!((c.used(), c.partition_bytes(p)), (1 << 20, 1 << 20));
        let both = c.read(p, 0, 1 << 20, 6).expect("cached");
        assert_eq!((both.len(), both.as_ptr()), (a.len() + b.len(), read.as_ptr()));
        // The charge goes only with the block's last batch.
        c.evict_range(p, 0, 3);
        assert_eq!(c.used(), 1 << 20);
        assert!(c.read(p, 0, 1 << 20, 6).is_none());
        c.evict_below(p, 6);
        assert_eq!((c.used(), c.partition_bytes(p)), (0, 0));
        drop((read, first, served, both));
        assert_eq!(pool.idle(), 1, "nothing holds the block any more");
    }

    #[test]
    fn batches_of_a_block_larger_than_the_budget_are_cached_as_copies() {
        use crate::protocol::batch::testing::{build_batch, BatchSpec};
        let a = build_batch(&BatchSpec { records: 1, value_len: 10, ..Default::default() });
        let pool = ArenaPool::new(4);
        let read = disk_read(&pool, &a, 2 << 20);
        let mut c = ShardCache::new(1 << 20, usize::MAX);
        let p = c.register();
        let served = c.insert_read(p, [&read]).expect("caching is on");
        assert_eq!((&served[..], c.used()), (&a[..], a.len()));
        let cached = c.read(p, 0, 1 << 20, 1).expect("cached");
        assert_eq!(&cached[..], &a[..]);
        assert_ne!(cached.as_ptr(), read.as_ptr(), "a copy, not a view of the 2 MiB block");
        drop((served, cached, read));
        assert_eq!(pool.idle(), 1, "the block is not held by the cache");
    }

    #[test]
    fn a_read_in_two_blocks_is_served_whole_and_cached_per_block() {
        use crate::protocol::batch::testing::{build_batch, BatchSpec};
        let spec = |base| BatchSpec {
            base_offset: base,
            records: 2,
            value_len: 100,
            ..Default::default()
        };
        let (a, b, c3) = (build_batch(&spec(0)), build_batch(&spec(2)), build_batch(&spec(4)));
        let pool = ArenaPool::new(4);
        // Offsets 0..4 from one read-ahead window, 4..6 from the next.
        let first = disk_read(&pool, &[a.clone(), b.clone()].concat(), 64 << 10);
        let second = disk_read(&pool, &c3, 64 << 10);
        let mut c = ShardCache::new(1 << 20, usize::MAX);
        let p = c.register();
        let served = c.insert_read(p, [&first, &second]).expect("caching is on");
        assert_eq!(&served[..], &[a.clone(), b.clone(), c3.clone()].concat()[..]);
        assert_eq!(c.used(), 128 << 10);
        // Each block's batches are views of that block.
        let again = c.read(p, 4, 1 << 20, 6).expect("cached");
        assert_eq!(again.as_ptr(), second.as_ptr());
        let ab = c.read(p, 0, a.len() + b.len(), 6).expect("cached");
        assert_eq!((ab.len(), ab.as_ptr()), (a.len() + b.len(), first.as_ptr()));
        // Caching off: the caller serves the parts itself.
        let mut off = ShardCache::new(0, usize::MAX);
        let q = off.register();
        assert!(off.insert_read(q, [&first]).is_none());
    }

    #[test]
    fn read_and_evict_one_partition() {
        let mut c = ShardCache::new(250, usize::MAX);
        let p = c.register();
        c.insert(p, cb(0, 2, 100));
        c.insert(p, cb(2, 3, 100));
        assert_eq!(c.read(p, 3, 1, 100).unwrap().len(), 100);
        assert_eq!(c.read(p, 3, 1, 100).unwrap()[0], 2);
        assert_eq!(c.read(p, 0, 200, 100).unwrap().len(), 200);
        assert_eq!(c.read(p, 0, 199, 100).unwrap().len(), 100);
        assert_eq!(c.read(p, 0, 1000, 2).unwrap().len(), 100); // hw limit
        assert!(c.read(p, 0, 1000, 0).is_none());
        assert!(c.read(p, 5, 1000, 100).is_none());
        c.insert(p, cb(5, 1, 100));
        assert_eq!(c.used(), 200);
        assert!(c.read(p, 1, 1000, 100).is_none()); // evicted
        assert_eq!(c.read(p, 2, 1000, 100).unwrap().len(), 200);
    }

    #[test]
    fn budget_never_exceeded_and_exact_accounting() {
        let mut c = ShardCache::new(10_000, usize::MAX);
        let ps: Vec<_> = (0..3).map(|_| c.register()).collect();
        let mut next = [0i64; 3];
        for i in 0..500usize {
            let k = i % 3;
            let len = 100 + (i * 37) % 900;
            c.insert(ps[k], cb(next[k], 2, len));
            next[k] += 2;
            assert!(c.used() <= c.budget());
            let sum: usize = ps.iter().map(|&p| c.partition_bytes(p)).sum();
            assert_eq!(sum, c.used());
            let sum2: usize =
                c.parts.values().flat_map(|p| p.batches.values()).map(|b| b.data.len()).sum();
            assert_eq!(sum2, c.used());
        }
        c.unregister(ps[0]);
        let sum: usize = ps[1..].iter().map(|&p| c.partition_bytes(p)).sum();
        assert_eq!(sum, c.used());
        c.clear(ps[1]);
        assert_eq!(c.used(), c.partition_bytes(ps[2]));
        // Too large for the budget: not cached at all.
        c.insert(ps[2], cb(1_000_000, 1, 20_000));
        assert!(c.read(ps[2], 1_000_000, 1 << 30, i64::MAX).is_none());
    }

    #[test]
    fn lru_partition_loses_its_oldest_first() {
        let mut c = ShardCache::new(600, usize::MAX);
        let a = c.register();
        let b = c.register();
        for i in 0..3 {
            c.insert(a, cb(i, 1, 100));
        }
        for i in 0..3 {
            c.insert(b, cb(i, 1, 100));
        }
        // a was touched longest ago: it pays, oldest offset first.
        c.insert(b, cb(3, 1, 100));
        assert!(c.read(a, 0, 1000, 100).is_none());
        assert_eq!(c.partition_bytes(a), 200);
        // Reading a makes b the least recently used.
        assert!(c.read(a, 1, 1000, 100).is_some());
        c.insert(a, cb(3, 1, 100));
        assert_eq!(c.partition_bytes(b), 300);
        assert!(c.read(b, 0, 1000, 100).is_none());
        assert!(c.read(b, 1, 1000, 100).is_some());
    }

    #[test]
    fn fair_share_between_partitions_written_alike() {
        let mut c = ShardCache::new(40_000, usize::MAX);
        let ps: Vec<_> = (0..4).map(|_| c.register()).collect();
        for i in 0..1000 {
            for &p in &ps {
                c.insert(p, cb(i, 1, 1000));
            }
        }
        for &p in &ps {
            let share = c.partition_bytes(p);
            assert!((9_000..=11_000).contains(&share), "share {share}");
            // The newest batches are the ones kept.
            assert!(c.read(p, 999, 1 << 20, 1000).is_some());
        }
    }

    #[test]
    fn partition_cap() {
        let mut c = ShardCache::new(10_000, 250);
        let p = c.register();
        for i in 0..10 {
            c.insert(p, cb(i, 1, 100));
        }
        assert_eq!(c.partition_bytes(p), 200);
        assert!(c.read(p, 8, 1000, 100).is_some());
        let mut off = ShardCache::new(0, usize::MAX);
        let q = off.register();
        off.insert(q, cb(0, 1, 10));
        assert_eq!(off.used(), 0);
        assert!(off.read(q, 0, 100, 10).is_none());
    }

    #[test]
    fn copies_placed_at_a_file_position_mirror_its_block_alignment() {
        // 64 KiB arenas (the minimum), one partition.
        let mut c = ShardCache::new(256 << 10, usize::MAX);
        let p = c.register();
        let at = |b: &Bytes| b.as_ptr() as usize % BLOCK_ALIGN;
        // The first copy skips 100 bytes of its new arena to sit at residue 100.
        let (a, tag_a) = c.copy_in_at(p, &[1; 1000], Some(8192 + 100), |_| {});
        assert_eq!(at(&a), 100);
        // The next batch of the file follows right after it: no gap.
        let (b, tag_b) = c.copy_in_at(p, &[2; 5000], Some(8192 + 1100), |_| {});
        assert_eq!((b.as_ptr() as usize, tag_b), (a.as_ptr() as usize + 1000, tag_a));
        // A new segment (position 0): the copy moves on to the next block boundary.
        let (d, tag_d) = c.copy_in_at(p, &[3; 300], Some(0), |_| {});
        assert_eq!((at(&d), tag_d), (0, tag_a));
        assert_eq!(d.as_ptr() as usize, (b.as_ptr() as usize + 5000).next_multiple_of(4096));
        // Fill the arena to 64,492 bytes (1,044 left, at residue 3,052).
        c.copy_in(p, &[0; 30_000], |_| {});
        let (full, _) = c.copy_in(p, &[0; 26_000], |_| {});
        let base = a.as_ptr() as usize - 100;
        assert_eq!(full.as_ptr() as usize + 26_000 - base, 64_492);
        // 1,000 bytes would fit, but not after the 948-byte gap to residue 4,000: a new
        // arena, the copy at that residue.
        let (e, tag_e) = c.copy_in_at(p, &[4; 1000], Some(4000), |_| {});
        assert_ne!(tag_e, tag_a);
        assert_eq!(at(&e), 4000);
        // Without a position, copies follow each other as before.
        let (f, _) = c.copy_in(p, &[5; 10], |_| {});
        assert_eq!(f.as_ptr() as usize, e.as_ptr() as usize + 1000);
    }

    #[test]
    fn evicted_arenas_are_reused() {
        // 256 KiB budget, one partition: 32 KiB arenas (budget / 8), 16 KiB batches.
        let mut c = ShardCache::new(256 << 10, usize::MAX);
        let p = c.register();
        assert_eq!(c.arena_bytes(), MIN_ARENA_BYTES);
        let mut arenas = std::collections::HashSet::new();
        let mut tags = std::collections::HashSet::new();
        for i in 0..200i64 {
            let (data, tag) = c.copy_in(p, &[i as u8; 16 << 10], |b| b[0] = 7);
            assert_eq!((data[0], data[1]), (7, i as u8));
            if tags.insert(tag) {
                arenas.insert(data.as_ptr() as usize);
            }
            c.insert(p, CachedBatch { base_offset: i, last_offset: i, data, alloc: tag });
            assert!(c.used() <= 256 << 10);
        }
        // 200 batches went through 50 arenas, all but the first few of them recycled
        // buffers: the cache holds 4 arenas' worth, plus the one being filled.
        assert_eq!(tags.len(), 50);
        assert!(arenas.len() <= 6, "{} distinct arena buffers", arenas.len());
        assert!(c.idle_arenas() <= IDLE_ARENAS);
    }

    #[test]
    fn prefaulted_buffers_are_read_windows_whatever_the_arena_size() {
        // 64 MiB, 64 partitions: 128 KiB arenas, but the prefault fills the budget with
        // 16 buffers of a read-ahead window, which the first reads from disk reuse.
        let shared = ShardCache::for_shard(64 << 20, usize::MAX);
        let mut c = shared.borrow_mut();
        for _ in 0..64 {
            c.register();
        }
        assert_eq!((c.arena_bytes(), c.prefault_buffer_bytes()), (128 << 10, 4 << 20));
        let mut prefaulted = 0;
        while c.prefault_one() {
            prefaulted += 1;
        }
        let pool = super::super::arena::shard_pool();
        assert_eq!((prefaulted, pool.idle(), pool.idle_bytes()), (16, 16, 64 << 20));
        let read = pool.read_block(super::super::segment::READ_AHEAD);
        assert_eq!((pool.idle(), pool.idle_bytes()), (15, 60 << 20));
        drop(read);
        assert_eq!((pool.idle(), pool.idle_bytes()), (16, 64 << 20));
        // A budget under one window: buffers of the arena size (64 KiB, one partition).
        let small = ShardCache::shared(2 << 20, usize::MAX);
        small.borrow_mut().register();
        assert_eq!(small.borrow().prefault_buffer_bytes(), MIN_ARENA_BYTES * 4);
    }

    #[test]
    fn prefaulted_buffers_fill_the_budget_and_become_the_arenas() {
        // 256 KiB budget, one partition: 64 KiB arenas, so 4 buffers fill the budget.
        let shared = ShardCache::for_shard(256 << 10, usize::MAX);
        let mut c = shared.borrow_mut();
        let p = c.register();
        assert_eq!(c.arena_bytes(), MIN_ARENA_BYTES);
        let mut prefaulted = 0;
        while c.prefault_one() {
            prefaulted += 1;
        }
        assert_eq!((prefaulted, c.idle_arenas()), (4, 4));
        let pool = super::super::arena::shard_pool();
        assert_eq!(pool.idle_bytes(), 256 << 10);
        // Appending 600 KiB: the first 4 arenas are the prefaulted buffers, the fifth is
        // new (the cache is full and nothing is evicted yet), every later one is an
        // evicted arena's buffer; idle plus cached memory stays within the budget plus
        // the one arena being filled.
        let mut buffers = Vec::new();
        let mut tags = std::collections::HashSet::new();
        for i in 0..75i64 {
            let (data, tag) = c.copy_in(p, &[i as u8; 8 << 10], |_| {});
            if tags.insert(tag) && !buffers.contains(&(data.as_ptr() as usize)) {
                buffers.push(data.as_ptr() as usize);
            }
            c.insert(p, CachedBatch { base_offset: i, last_offset: i, data, alloc: tag });
            assert!(pool.idle_bytes() + c.used() <= (256 << 10) + MIN_ARENA_BYTES, "at {i}");
        }
        assert_eq!((tags.len(), buffers.len()), (10, 5));
        // A log's private cache (an internal log's) on the same thread leaves the
        // reserve alone: its arenas do not make the pool shed the shard's idle memory.
        let idle = pool.idle_bytes();
        let mut private = ShardCache::new(64 << 10, usize::MAX);
        let q = private.register();
        let (data, tag) = private.copy_in(q, &[1; 100], |_| {});
        private.insert(q, CachedBatch { base_offset: 0, last_offset: 0, data, alloc: tag });
        assert_eq!(pool.idle_bytes(), idle);
        assert!(!private.prefault_one(), "only the shard's cache prefaults");
        // A cache that is off, or that may cache no data partition, faults nothing in
        // and keeps no reserve.
        assert!(!ShardCache::for_shard(0, usize::MAX).borrow().prefault_one());
        assert!(!ShardCache::for_shard(1 << 20, 0).borrow().prefault_one());
        assert_eq!(pool.idle(), IDLE_ARENAS.min(idle / MIN_ARENA_BYTES));
    }

    #[test]
    fn arena_batches_join_without_copy() {
        let mut c = ShardCache::new(1 << 20, usize::MAX);
        let p = c.register();
        let mut ptrs = Vec::new();
        for i in 0..4 {
            let (data, tag) = c.copy_in(p, &[i as u8; 1000], |_| {});
            ptrs.push(data.as_ptr());
            c.insert(p, CachedBatch { base_offset: i, last_offset: i, data, alloc: tag });
        }
        let r = c.read(p, 0, 1 << 20, 100).unwrap();
        assert_eq!(r.len(), 4000);
        assert_eq!(r.as_ptr(), ptrs[0]);
        assert_eq!(&r[1000..1003], &[1, 1, 1]);
        assert_eq!(r[3999], 3);
    }

    #[test]
    fn gaps_stop_a_read_and_unjoinable_batches_are_copied() {
        let mut c = ShardCache::new(1 << 20, usize::MAX);
        let p = c.register();
        c.insert(p, cb(0, 1, 100));
        c.insert(p, cb(1, 1, 100));
        c.insert(p, cb(5, 1, 100));
        let r = c.read(p, 0, 1 << 20, 100).unwrap();
        assert_eq!(r.len(), 200);
        assert_eq!((r[0], r[100]), (0, 1));
        assert!(c.read(p, 3, 1 << 20, 100).is_none());
    }

    #[test]
    fn unjoinable_reads_are_cut_when_long_else_copied() {
        let mut c = ShardCache::new(1 << 20, usize::MAX);
        let p = c.register();
        // Two adjacent arena batches, then one in its own allocation.
        for i in 0..2 {
            let (data, tag) = c.copy_in(p, &[i as u8; 40_000], |_| {});
            c.insert(p, CachedBatch { base_offset: i, last_offset: i, data, alloc: tag });
        }
        c.insert(p, cb(2, 1, 50_000));
        let r = c.read(p, 0, 1 << 20, 100).unwrap();
        assert_eq!(r.len(), 80_000); // cut at the break, zero-copy
        let first = c.read(p, 0, 40_000, 100).unwrap();
        assert_eq!(r.as_ptr(), first.as_ptr());
        // A batch outside any arena is cut off only when it is at least half.
        c.insert(p, cb(3, 1, 200_000));
        let r = c.read(p, 2, 1 << 20, 100).unwrap();
        assert_eq!(r.len(), 250_000); // 50 KB before the break: copied
        assert_eq!((r[0], r[50_000]), (2, 3));
        c.insert(p, cb(4, 1, 100_000));
        let r = c.read(p, 3, 1 << 20, 100).unwrap();
        assert_eq!(r.len(), 200_000); // 200 KB of 300 KB: cut
                                      // An arena run is cut off however short it is (the copy would cost far more
                                      // than the consumer's next fetch), unless the whole read is short.
        let mut d = ShardCache::new(8 << 20, usize::MAX); // 1 MiB arenas
        let q = d.register();
        let (data, tag) = d.copy_in(q, &[9; 1_000], |_| {});
        d.insert(q, CachedBatch { base_offset: 0, last_offset: 0, data, alloc: tag });
        d.insert(q, cb(1, 1, 500_000));
        d.insert(q, cb(2, 1, 500));
        assert_eq!(d.read(q, 0, 1 << 20, 100).unwrap().len(), 1_000);
        let r = d.read(q, 1, 1 << 20, 100).unwrap();
        assert_eq!(r.len(), 500_000); // outside arenas: long and at least half, cut
        let mut e = ShardCache::new(8 << 20, usize::MAX);
        let q = e.register();
        let (data, tag) = e.copy_in(q, &[9; 1_000], |_| {});
        e.insert(q, CachedBatch { base_offset: 0, last_offset: 0, data, alloc: tag });
        e.insert(q, cb(1, 1, 5_000));
        let r = e.read(q, 0, 1 << 20, 100).unwrap();
        assert_eq!((r.len(), r[0], r[1_000]), (6_000, 9, 1)); // short: copied
    }
}
