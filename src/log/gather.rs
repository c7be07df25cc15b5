//! DMA writes of appended batches straight from the batch cache's arena (issue 8, item 2:
//! batches are copied once, into memory laid out like the file).
//!
//! An append copies its batch into the partition's arena at an address congruent to
//! its file position modulo the block size (`ShardCache::copy_in_at`), so a group of
//! consecutive batches covers whole file blocks at block-aligned addresses. The writer
//! then sends one gathered write (`writev`) of up to three pieces: the partial first
//! block (the bytes already in the file's last block, then the group's first bytes;
//! copied), the whole blocks (from the arena, no copy) and the partial last block
//! (copied, zero padded). The bytes written are exactly those of the copying path,
//! which stays for groups that do not qualify: batches not adjacent in one arena (a new
//! arena, a batch too large to cache, caching off), an arena not aligned like the file,
//! or a group inside one block.

use std::fmt;

use bytes::Bytes;
use glommio::io::{DmaBuffer, DmaFile, WriteSource};
use nix::libc::iovec;

/// How a group of contiguous bytes splits around the file's block boundaries; offsets
/// in bytes from the group's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Bytes before the first block boundary (they complete the file's partial block).
    pub lead: usize,
    /// Bytes of whole blocks after `lead`, written from the arena; at least one block.
    pub whole: usize,
    /// Bytes after those (the new partial last block); below one block.
    pub rest: usize,
}

/// The split of a group of `len` bytes at address `addr`, to be written at file position
/// `pos` with blocks of `align` bytes (a power of two). `None` when the address is not
/// congruent to the position modulo `align`, or no whole block lies inside the group.
pub fn plan(addr: usize, pos: u64, len: usize, align: usize) -> Option<Plan> {
    let into_block = (pos % align as u64) as usize;
    if addr % align != into_block {
        return None;
    }
    let lead = (align - into_block) % align;
    let whole = len.checked_sub(lead)? / align * align;
    (whole > 0).then_some(Plan { lead, whole, rest: len - lead - whole })
}

/// One gathered write: the memory it reads (the two copied blocks and the batches whose
/// arena memory the whole blocks are), kept until the kernel is done with it.
pub struct GatheredWrite {
    head: Option<DmaBuffer>,
    _batches: Vec<Bytes>,
    tail: Option<DmaBuffer>,
    iov: [iovec; 3],
    pieces: usize,
    /// Bytes of the file's new partial last block, `[align_down(end), end)`.
    pub new_tail: Vec<u8>,
    /// Bytes the write covers (a multiple of the block size).
    pub len: usize,
}

impl GatheredWrite {
    /// The write of `batches` (in file order) at file position `pos`, where the file's
    /// partial last block holds `partial` (`pos % alignment` bytes). `None` when they do
    /// not qualify (see the module documentation); the caller then copies.
    pub fn new(file: &DmaFile, partial: &[u8], batches: Vec<Bytes>, pos: u64) -> Option<Self> {
        let align = file.alignment() as usize;
        let addr = batches.first()?.as_ptr() as usize;
        let mut next = addr;
        for b in &batches {
            if b.as_ptr() as usize != next {
                return None;
            }
            next += b.len();
        }
        let len = next - addr;
        let p = plan(addr, pos, len, align)?;
        if partial.len() != (pos % align as u64) as usize {
            return None;
        }
        let empty = iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        let (mut iov, mut pieces) = ([empty; 3], 0);
        let mut push = |v: iovec| {
            iov[pieces] = v;
            pieces += 1;
        };
        let head = (!partial.is_empty()).then(|| {
            let mut b = file.alloc_dma_buffer(align);
            let bytes = b.as_bytes_mut();
            bytes[..partial.len()].copy_from_slice(partial);
            copy_out(&batches, 0, &mut bytes[partial.len()..]);
            b
        });
        if let Some(h) = &head {
            push(iovec { iov_base: h.as_ptr() as *mut _, iov_len: align });
        }
        push(iovec { iov_base: (addr + p.lead) as *mut _, iov_len: p.whole });
        let from = p.lead + p.whole;
        let mut new_tail = vec![0; p.rest];
        copy_out(&batches, from, &mut new_tail);
        let tail = (p.rest > 0).then(|| {
            let mut b = file.alloc_dma_buffer(align);
            let bytes = b.as_bytes_mut();
            bytes[..p.rest].copy_from_slice(&new_tail);
            bytes[p.rest..].fill(0);
            b
        });
        if let Some(t) = &tail {
            push(iovec { iov_base: t.as_ptr() as *mut _, iov_len: align });
        }
        let len = iov[..pieces].iter().map(|v| v.iov_len).sum();
        Some(GatheredWrite { head, _batches: batches, tail, iov, pieces, new_tail, len })
    }
}

/// Copies the group's bytes from offset `from` into all of `dst`.
fn copy_out(batches: &[Bytes], mut from: usize, dst: &mut [u8]) {
    let mut at = 0;
    for b in batches {
        if at == dst.len() {
            return;
        }
        if from >= b.len() {
            from -= b.len();
            continue;
        }
        let n = (b.len() - from).min(dst.len() - at);
        dst[at..at + n].copy_from_slice(&b[from..from + n]);
        at += n;
        from = 0;
    }
    assert_eq!(at, dst.len(), "the group holds the bytes asked for");
}

impl fmt::Debug for GatheredWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatheredWrite")
            .field("pieces", &self.pieces)
            .field("len", &self.len)
            .field("head", &self.head.is_some())
            .field("tail", &self.tail.is_some())
            .finish()
    }
}

// SAFETY: every `iovec` points into memory this value owns or keeps alive: the head and
// tail `DmaBuffer`s (heap memory that does not move with the value, written only before
// the `iovec`s were made) and the batches' arena memory, held by `_batches`, which an
// arena never writes again once handed out (`Arena::push`). The `iovec` array is the
// value's own array (moving the value moves it, but the reactor reads it only where
// the value finally lives, in its source). All addresses and lengths are multiples of the file's alignment
// (the `DmaBuffer`s are aligned; `plan` checked the arena piece).
unsafe impl WriteSource for GatheredWrite {
    fn iovecs(&self) -> &[iovec] {
        &self.iov[..self.pieces]
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_splits_at_the_block_boundaries() {
        // 100 bytes already in the file's last block, then 10,000 bytes.
        assert_eq!(
            plan(4096 * 7 + 100, 8192 + 100, 10_000, 4096),
            Some(Plan { lead: 3996, whole: 4096, rest: 1908 })
        );
        // Starting on a boundary: no lead; ending on one: no rest.
        assert_eq!(plan(4096, 0, 8192, 4096), Some(Plan { lead: 0, whole: 8192, rest: 0 }));
    }

    #[test]
    fn no_plan_when_the_arena_is_not_aligned_like_the_file_or_no_block_is_whole() {
        assert_eq!(plan(4096 + 1, 0, 100_000, 4096), None);
        assert_eq!(plan(4096 * 3 + 100, 100, 4095, 4096), None); // ends inside block 1
        assert_eq!(plan(4096 * 3 + 100, 100, 3000, 4096), None); // inside the first block
        assert_eq!(
            plan(4096 * 3 + 100, 100, 3996 + 4096, 4096),
            Some(Plan { lead: 3996, whole: 4096, rest: 0 })
        );
    }

    #[test]
    fn copy_out_reads_across_batches() {
        let batches = vec![Bytes::from_static(b"abc"), Bytes::from_static(b"defgh")];
        let mut dst = [0u8; 4];
        copy_out(&batches, 2, &mut dst);
        assert_eq!(&dst, b"cdef");
        let mut none = [0u8; 0];
        copy_out(&batches, 8, &mut none);
    }
}
