//! Response frames as a list of `Bytes` segments, so record batches go to the
//! socket from the log's own buffers instead of being copied into the response.
//!
//! kafka-protocol encodes a `records` field as its length prefix followed by one
//! `put_slice` of the bytes. [`Segments`] is a `BufMut` that recognises those
//! slices (same pointer and length as a registered `Bytes`) and keeps a reference
//! to the `Bytes` instead of copying it. Everything else is copied as usual.

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::buf::ByteBufMut;

/// Slices shorter than this are copied even when registered: a separate write
/// costs more than the copy.
const MIN_ZERO_COPY: usize = 16 * 1024;

/// An encoded frame under construction: its 4-byte size prefix and first segment
/// (kept mutable so the prefix can be filled in at the end), the finished segments,
/// and the current one.
pub struct Segments {
    first: Option<BytesMut>,
    done: Vec<Bytes>,
    cur: BytesMut,
    /// Payloads to pass by reference when the encoder writes them.
    zero_copy: Vec<Bytes>,
    /// Bytes in `done` (the encoder's notion of the write offset needs it).
    done_len: usize,
}

impl Segments {
    /// A frame whose `zero_copy` payloads will be referenced, not copied. Starts with
    /// a 4-byte size placeholder, filled in by [`Segments::finish`].
    pub fn new(zero_copy: Vec<Bytes>, capacity: usize) -> Self {
        let zero_copy = zero_copy.into_iter().filter(|b| b.len() >= MIN_ZERO_COPY).collect();
        let mut cur = BytesMut::with_capacity(capacity.max(4));
        cur.put_i32(0);
        Segments { first: None, done: Vec::new(), cur, zero_copy, done_len: 0 }
    }

    /// The finished frame, in order, with its size prefix (bytes after the prefix).
    pub fn finish(mut self) -> Vec<Bytes> {
        let size = (self.len() - 4) as i32;
        let mut first = match self.first.take() {
            Some(f) => f,
            None => std::mem::take(&mut self.cur),
        };
        first[..4].copy_from_slice(&size.to_be_bytes());
        let mut out = Vec::with_capacity(self.done.len() + 2);
        out.push(first.freeze());
        out.append(&mut self.done);
        if !self.cur.is_empty() {
            out.push(self.cur.freeze());
        }
        out
    }

    /// Total encoded length so far, in bytes.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.done_len + self.cur.len()
    }
}

// SAFETY: every method forwards to `cur`, a `BytesMut`, which upholds the
// `BufMut` contract; `put_slice` only diverts whole slices into `done`.
unsafe impl BufMut for Segments {
    fn remaining_mut(&self) -> usize {
        self.cur.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: forwarded under the caller's guarantee for `cur`.
        unsafe { self.cur.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.cur.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        if src.len() >= MIN_ZERO_COPY {
            if let Some(b) =
                self.zero_copy.iter().find(|b| b.as_ptr() == src.as_ptr() && b.len() == src.len())
            {
                let b = b.clone();
                if !self.cur.is_empty() {
                    let head = self.cur.split();
                    self.done_len += head.len();
                    if self.first.is_none() && self.done.is_empty() {
                        self.first = Some(head);
                    } else {
                        self.done.push(head.freeze());
                    }
                }
                self.done_len += b.len();
                self.done.push(b);
                return;
            }
        }
        self.cur.extend_from_slice(src);
    }
}

impl ByteBufMut for Segments {
    fn offset(&self) -> usize {
        self.len()
    }

    /// Only moves within the current segment (response encoding never seeks; record
    /// encoding, which does, never runs on a `Segments`).
    fn seek(&mut self, offset: usize) {
        self.cur.resize(offset.saturating_sub(self.done_len), 0);
    }

    fn range(&mut self, r: std::ops::Range<usize>) -> &mut [u8] {
        let base = self.done_len;
        &mut self.cur[r.start - base..r.end - base]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_payloads_are_referenced_not_copied() {
        let payload = Bytes::from(vec![7u8; 20_000]);
        let mut s = Segments::new(vec![payload.clone()], 64);
        s.put_i32(5);
        s.put_slice(&payload);
        s.put_i16(9);
        assert_eq!(s.len(), 4 + 4 + 20_000 + 2);
        let parts = s.finish();
        assert_eq!(parts.len(), 3);
        assert_eq!(&parts[0][..], &[0, 0, 0x4e, 0x26, 0, 0, 0, 5]); // size 20,006, then 5
        assert_eq!(parts[1].as_ptr(), payload.as_ptr());
        assert_eq!(&parts[2][..], &9i16.to_be_bytes());
    }

    #[test]
    fn other_slices_are_copied() {
        let payload = Bytes::from(vec![7u8; 20_000]);
        let other = vec![7u8; 20_000];
        let mut s = Segments::new(vec![payload], 64);
        s.put_slice(&other);
        let parts = s.finish();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].len(), 4 + 20_000);
        assert_eq!(&parts[0][..4], &20_000i32.to_be_bytes());
    }
}
