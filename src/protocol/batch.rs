//! Zero-copy view of a Kafka record batch, format v2 (magic 2).
//!
//! Source: Kafka protocol guide, "Messages / Record Batch" (and KIP-98 for the
//! producer fields). All integers are big-endian. Layout of the 61-byte header:
//!
//! | offset | field | type |
//! | --- | --- | --- |
//! | 0 | baseOffset | i64 |
//! | 8 | batchLength (bytes after this field; total = 12 + batchLength) | i32 |
//! | 12 | partitionLeaderEpoch | i32 |
//! | 16 | magic (= 2) | i8 |
//! | 17 | crc (CRC32C of bytes 21..end) | u32 |
//! | 21 | attributes | i16 |
//! | 23 | lastOffsetDelta | i32 |
//! | 27 | baseTimestamp (ms) | i64 |
//! | 35 | maxTimestamp (ms) | i64 |
//! | 43 | producerId | i64 |
//! | 51 | producerEpoch | i16 |
//! | 53 | baseSequence | i32 |
//! | 57 | recordsCount | i32 |
//! | 61 | records... | |
//!
//! This module does no I/O and never imports glommio; it is fuzzable on its own.

use std::fmt;

/// Size in bytes of a v2 record batch header (everything before the first record).
pub const RECORD_BATCH_OVERHEAD: usize = 61;

/// Bytes of the batch counted *before* `batchLength` ends: baseOffset (8) + batchLength (4).
/// The total size of a batch is `LOG_OVERHEAD + batchLength`.
pub const LOG_OVERHEAD: usize = 12;

/// Smallest legal `batchLength`: the header minus [`LOG_OVERHEAD`] (a batch with no records).
pub const MIN_BATCH_LENGTH: i32 = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;

/// The only supported record batch format version.
pub const MAGIC_V2: i8 = 2;

const OFF_BASE_OFFSET: usize = 0;
const OFF_BATCH_LENGTH: usize = 8;
const OFF_LEADER_EPOCH: usize = 12;
const OFF_MAGIC: usize = 16;
const OFF_CRC: usize = 17;
const OFF_ATTRIBUTES: usize = 21;
const OFF_LAST_OFFSET_DELTA: usize = 23;
const OFF_BASE_TIMESTAMP: usize = 27;
const OFF_MAX_TIMESTAMP: usize = 35;
const OFF_PRODUCER_ID: usize = 43;
const OFF_PRODUCER_EPOCH: usize = 51;
const OFF_BASE_SEQUENCE: usize = 53;
const OFF_RECORDS_COUNT: usize = 57;

/// Attribute bits 0-2: compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
pub const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// Attribute bit 3: timestamps are LogAppendTime (set by the broker) instead of CreateTime.
pub const ATTR_LOG_APPEND_TIME: i16 = 0x08;
/// Attribute bit 4: the batch is part of a transaction.
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
/// Attribute bit 5: the batch is a control batch (transaction marker).
pub const ATTR_CONTROL: i16 = 0x20;

/// Why a byte slice is not a valid v2 record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchError {
    /// The buffer is shorter than the header ([`RECORD_BATCH_OVERHEAD`] bytes) or than the
    /// batch's own declared total size (`12 + batchLength`).
    Truncated,
    /// Byte 16 (magic) is not 2. Carries the magic found. Magic 0/1 are the legacy
    /// message-set formats, which this broker does not store.
    UnsupportedMagic(i8),
    /// `batchLength` is below [`MIN_BATCH_LENGTH`] (49); carries the value found.
    InvalidLength(i32),
    /// The stored CRC32C does not match the bytes from `attributes` to the end of the batch.
    CorruptCrc,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::Truncated => write!(f, "record batch truncated"),
            BatchError::UnsupportedMagic(m) => write!(f, "unsupported record batch magic {m}"),
            BatchError::InvalidLength(l) => write!(f, "invalid record batch length {l}"),
            BatchError::CorruptCrc => write!(f, "record batch CRC32C mismatch"),
        }
    }
}

impl std::error::Error for BatchError {}

#[inline]
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
/// The `N` bytes at `at` (callers have checked `b.len() >= at + N`).
#[inline]
fn bytes_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}
#[inline]
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(bytes_at(b, at))
}
#[inline]
fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes_at(b, at))
}
#[inline]
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(bytes_at(b, at))
}

/// The parsed 61-byte header of one v2 record batch (a copy of its fields; the batch
/// bytes themselves are not retained). Timestamps are milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBatchHeader {
    /// Offset of the first record (rewritten by the broker on append).
    pub base_offset: i64,
    /// Bytes following the `batchLength` field; total batch size is `12 + batch_length`.
    pub batch_length: i32,
    /// Leader epoch of the partition when the batch was appended.
    pub partition_leader_epoch: i32,
    /// Format version; always 2 for a parsed header.
    pub magic: i8,
    /// Stored CRC32C (Castagnoli) of bytes 21..end.
    pub crc: u32,
    /// Attribute bits (see the `ATTR_*` constants).
    pub attributes: i16,
    /// `last offset - base offset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (ms).
    pub base_timestamp: i64,
    /// Largest record timestamp in the batch (ms); the append time under LogAppendTime.
    pub max_timestamp: i64,
    /// Idempotent/transactional producer id, or -1.
    pub producer_id: i64,
    /// Producer epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence number of the first record, or -1.
    pub base_sequence: i32,
    /// Number of records the batch declares.
    pub records_count: i32,
}

impl RecordBatchHeader {
    /// Parses and validates the header at the start of `buf`.
    ///
    /// Checks, in order: at least 17 bytes (else `Truncated`), magic byte == 2 (else
    /// `UnsupportedMagic`), at least 61 bytes (else `Truncated`), `batchLength >= 49`
    /// (else `InvalidLength`), and that the whole batch (`12 + batchLength` bytes) is
    /// inside `buf` (else `Truncated`). The CRC is *not* checked; see [`verify_crc`].
    pub fn parse(buf: &[u8]) -> Result<RecordBatchHeader, BatchError> {
        let h = Self::parse_header(buf)?;
        if (buf.len() as u64) < LOG_OVERHEAD as u64 + h.batch_length as u64 {
            return Err(BatchError::Truncated);
        }
        Ok(h)
    }

    /// Like [`Self::parse`] but only requires the 61 header bytes to be present (the
    /// records may lie beyond `buf`): validates magic and `batchLength >= 49`. Used to
    /// walk batches on disk reading headers only.
    pub fn parse_header(buf: &[u8]) -> Result<RecordBatchHeader, BatchError> {
        if buf.len() <= OFF_MAGIC {
            return Err(BatchError::Truncated);
        }
        let magic = buf[OFF_MAGIC] as i8;
        if magic != MAGIC_V2 {
            return Err(BatchError::UnsupportedMagic(magic));
        }
        if buf.len() < RECORD_BATCH_OVERHEAD {
            return Err(BatchError::Truncated);
        }
        let batch_length = be_i32(buf, OFF_BATCH_LENGTH);
        if batch_length < MIN_BATCH_LENGTH {
            return Err(BatchError::InvalidLength(batch_length));
        }
        Ok(RecordBatchHeader {
            base_offset: be_i64(buf, OFF_BASE_OFFSET),
            batch_length,
            partition_leader_epoch: be_i32(buf, OFF_LEADER_EPOCH),
            magic,
            crc: be_u32(buf, OFF_CRC),
            attributes: be_i16(buf, OFF_ATTRIBUTES),
            last_offset_delta: be_i32(buf, OFF_LAST_OFFSET_DELTA),
            base_timestamp: be_i64(buf, OFF_BASE_TIMESTAMP),
            max_timestamp: be_i64(buf, OFF_MAX_TIMESTAMP),
            producer_id: be_i64(buf, OFF_PRODUCER_ID),
            producer_epoch: be_i16(buf, OFF_PRODUCER_EPOCH),
            base_sequence: be_i32(buf, OFF_BASE_SEQUENCE),
            records_count: be_i32(buf, OFF_RECORDS_COUNT),
        })
    }

    /// Total size of the batch in bytes: `12 + batchLength`.
    pub fn total_size(&self) -> usize {
        LOG_OVERHEAD + self.batch_length as usize
    }

    /// Offset of the last record: `base_offset + last_offset_delta`.
    pub fn last_offset(&self) -> i64 {
        self.base_offset + self.last_offset_delta as i64
    }

    /// Offset the next batch would get: `last_offset() + 1`.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }

    /// Compression codec id, attribute bits 0-2 (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
    pub fn compression(&self) -> u8 {
        (self.attributes & ATTR_COMPRESSION_MASK) as u8
    }

    /// Attribute bit 4.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// Attribute bit 5.
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// Attribute bit 3: true when timestamps are LogAppendTime.
    pub fn timestamp_type_log_append(&self) -> bool {
        self.attributes & ATTR_LOG_APPEND_TIME != 0
    }

    /// Sequence number of the last record, wrapping at `i32::MAX` to 0 as Kafka does
    /// (`DefaultRecordBatch.incrementSequence`). -1 when `base_sequence` is -1.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence < 0 {
            return -1;
        }
        let s = self.base_sequence as i64 + self.last_offset_delta as i64;
        (s % (i32::MAX as i64 + 1)) as i32
    }
}

/// CRC32C over the bytes a v2 batch's CRC covers (attributes to end). Requires
/// `batch.len() >= 21`.
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[OFF_ATTRIBUTES..])
}

/// True when `batch` is exactly one whole v2 batch (as [`RecordBatchHeader::parse`]
/// accepts, with no trailing bytes beyond `12 + batchLength` considered) whose stored
/// CRC32C matches bytes 21..end. Never panics; false on any malformed input.
pub fn verify_crc(batch: &[u8]) -> bool {
    match RecordBatchHeader::parse(batch) {
        Ok(h) => compute_crc(&batch[..h.total_size()]) == h.crc,
        Err(_) => false,
    }
}

/// Writes `epoch` into partitionLeaderEpoch (bytes 12..16), as the leader does on
/// append. The field is outside the CRC, so the CRC stays valid. Panics if
/// `batch.len() < 16`.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[OFF_LEADER_EPOCH..OFF_LEADER_EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// Writes `base_offset` into bytes 0..8. The field is outside the CRC, so the CRC
/// stays valid. Panics if `batch.len() < 8`.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[OFF_BASE_OFFSET..OFF_BASE_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Marks the batch as LogAppendTime (attribute bit 3), writes `ts_ms` into
/// maxTimestamp (baseTimestamp is left alone, as Kafka does) and recomputes the CRC.
/// `batch` must be exactly one whole batch (the CRC covers 21..batch.len()); panics if
/// shorter than [`RECORD_BATCH_OVERHEAD`].
pub fn set_log_append_time(batch: &mut [u8], ts_ms: i64) {
    assert!(batch.len() >= RECORD_BATCH_OVERHEAD);
    let attrs = be_i16(batch, OFF_ATTRIBUTES) | ATTR_LOG_APPEND_TIME;
    batch[OFF_ATTRIBUTES..OFF_ATTRIBUTES + 2].copy_from_slice(&attrs.to_be_bytes());
    batch[OFF_MAX_TIMESTAMP..OFF_MAX_TIMESTAMP + 8].copy_from_slice(&ts_ms.to_be_bytes());
    let crc = compute_crc(batch);
    batch[OFF_CRC..OFF_CRC + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Where a [`BatchScan`] stopped, and why. The stop position is [`BatchScan::position`]
/// (or [`ScanResult::valid_bytes`]): the end of the last whole valid batch, exclusive.
///
/// Only [`ScanStop::NeedMore`] asks for more bytes; every other reason is final, and a
/// recovering log keeps exactly the bytes before the stop position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStop {
    /// Clean end: the slice held only whole valid batches and no data follows it
    /// (`bytes_after == 0`).
    End,
    /// The slice ends before the data does, in the middle of the batch at the stop
    /// position (or exactly before it). Read again from the stop position, at least
    /// `need` bytes: the batch's total size (`12 + batchLength`) when its header was in
    /// the slice, else the 61-byte header (or all the data left, if less). `need` never
    /// exceeds the bytes left in the slice plus `bytes_after`, so the next read settles it.
    NeedMore {
        /// Bytes from the stop position that the next read must cover.
        need: usize,
    },
    /// Torn tail: the batch at the stop position needs `need` bytes (its declared total
    /// size, or 61 when even its header is cut short) but the data ends sooner, as when a
    /// crash cut a write short. A garbage `batchLength` that points past the end of the
    /// data reads the same.
    TornTail {
        /// Bytes the batch at the stop position would need.
        need: usize,
    },
    /// Zero padding: the header bytes at the stop position (61, or fewer at the end of the
    /// data) are all zero, so no batch was ever written there. Right after the last batch
    /// of a segment that was not closed cleanly, this is the zero fill up to the DMA
    /// alignment: the normal end of the data. The scan does not look past those header
    /// bytes.
    ZeroPadding,
    /// A corrupt batch at the stop position: [`BatchError::UnsupportedMagic`],
    /// [`BatchError::InvalidLength`] or [`BatchError::CorruptCrc`] (never
    /// [`BatchError::Truncated`], which is `NeedMore` or `TornTail` here).
    Corrupt(BatchError),
    /// A whole batch whose CRC checks, but whose offsets cannot come next: its base offset
    /// is below `expected` (the offset after the batch before it, or the segment's base
    /// offset), its last offset is below its base offset, or it is more than `i32::MAX`
    /// past the segment's base offset (Kafka keeps relative offsets in 32 bits). The
    /// batch's first 8 bytes (baseOffset) are outside the CRC, so this is how some damage
    /// to them shows (not all: a low byte raised gives a valid-looking later offset, and
    /// then the batches after that one end the data instead). Found by the log's
    /// recovery, not by [`BatchScan`], which does not know the offsets expected.
    BadOffsets { base_offset: i64, last_offset: i64, expected: i64 },
}

impl fmt::Display for ScanStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanStop::End => write!(f, "end of data"),
            ScanStop::NeedMore { need } => {
                write!(f, "batch continues past the bytes read ({need} bytes needed)")
            }
            ScanStop::TornTail { need } => {
                write!(f, "torn tail: the batch needs {need} bytes but the data ends first")
            }
            ScanStop::ZeroPadding => write!(f, "zero padding after the last batch (end of data)"),
            ScanStop::Corrupt(e) => write!(f, "corrupt batch: {e}"),
            ScanStop::BadOffsets { base_offset, last_offset, expected } => write!(
                f,
                "batch with offsets {base_offset}..={last_offset} where offset {expected} or \
                 later was expected (damaged base offset?)"
            ),
        }
    }
}

/// The scan that recovery uses: walks consecutive v2 batches from the start of a byte
/// slice, checking each one's header (magic 2, `batchLength >= 49`), that it is whole,
/// and its CRC32C; yields `(position, header)` for every valid batch, where `position` is
/// the batch's first byte in the slice, then ends at the first byte that does not start
/// a valid batch. After it ends, [`BatchScan::stop`] says why and
/// [`BatchScan::position`] where.
///
/// `bytes_after` is how many bytes of the same data follow the slice but were not read
/// (0 when the slice reaches the end of the data, e.g. of the segment file). It decides
/// whether a batch cut off by the end of the slice is [`ScanStop::NeedMore`] (read more)
/// or [`ScanStop::TornTail`] (final). A reader of a file in chunks scans each chunk,
/// then on `NeedMore { need }` reads again from the stop position at least `need` bytes;
/// see `log::segment::Segment::scan`.
///
/// Pure (no I/O) and never panics, whatever the bytes.
#[derive(Debug, Clone)]
pub struct BatchScan<'a> {
    buf: &'a [u8],
    bytes_after: u64,
    pos: usize,
    stop: Option<ScanStop>,
}

impl<'a> BatchScan<'a> {
    /// Scans `buf` from its start; `bytes_after` bytes of the data follow it unread.
    pub fn new(buf: &'a [u8], bytes_after: u64) -> Self {
        BatchScan { buf, bytes_after, pos: 0, stop: None }
    }

    /// Bytes from the start of the slice covered by the valid batches yielded so far;
    /// once the scan has ended, the stop position.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Why the scan ended; `None` while it has not ended yet.
    pub fn stop(&self) -> Option<ScanStop> {
        self.stop
    }

    /// The batch starting at `self.pos`, or why there is none.
    fn next_batch(&self) -> Result<RecordBatchHeader, ScanStop> {
        let rest = &self.buf[self.pos..];
        let left = rest.len() as u64 + self.bytes_after;
        // The slice ends inside the header: read on (at most what the data holds) to judge
        // it, unless the data itself ends here.
        let header_cut = || {
            if self.bytes_after > 0 {
                ScanStop::NeedMore { need: left.min(RECORD_BATCH_OVERHEAD as u64) as usize }
            } else {
                ScanStop::TornTail { need: RECORD_BATCH_OVERHEAD }
            }
        };
        if rest.is_empty() && self.bytes_after == 0 {
            return Err(ScanStop::End);
        }
        let head = &rest[..rest.len().min(RECORD_BATCH_OVERHEAD)];
        if head.iter().all(|&b| b == 0) {
            if head.len() == RECORD_BATCH_OVERHEAD || self.bytes_after == 0 {
                return Err(ScanStop::ZeroPadding);
            }
            return Err(header_cut());
        }
        let h = match RecordBatchHeader::parse_header(rest) {
            Ok(h) => h,
            Err(BatchError::Truncated) => return Err(header_cut()),
            Err(e) => return Err(ScanStop::Corrupt(e)),
        };
        let size = h.total_size();
        if rest.len() < size {
            return Err(if left >= size as u64 {
                ScanStop::NeedMore { need: size }
            } else {
                ScanStop::TornTail { need: size }
            });
        }
        if compute_crc(&rest[..size]) != h.crc {
            return Err(ScanStop::Corrupt(BatchError::CorruptCrc));
        }
        Ok(h)
    }
}

impl Iterator for BatchScan<'_> {
    type Item = (usize, RecordBatchHeader);

    fn next(&mut self) -> Option<Self::Item> {
        if self.stop.is_some() {
            return None;
        }
        match self.next_batch() {
            Ok(h) => {
                let at = self.pos;
                self.pos += h.total_size();
                Some((at, h))
            }
            Err(stop) => {
                self.stop = Some(stop);
                None
            }
        }
    }
}

/// Result of [`scan_batches`]: how much of a byte slice is a valid run of batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanResult {
    /// Bytes from the start of the slice covered by valid whole batches (the stop
    /// position, exclusive end of the last valid batch).
    pub valid_bytes: usize,
    /// Number of valid batches.
    pub batches: usize,
    /// Header of the last valid batch, if any.
    pub last: Option<RecordBatchHeader>,
    /// Why the scan stopped ([`ScanStop::End`] when the whole slice was valid batches).
    pub stop: ScanStop,
}

/// Runs a [`BatchScan`] over all of `buf`, taken as the whole data (nothing follows it,
/// so the stop is never `NeedMore`), and sums it up. Pure, never panics.
pub fn scan_batches(buf: &[u8]) -> ScanResult {
    let mut scan = BatchScan::new(buf, 0);
    let mut batches = 0usize;
    let mut last = None;
    for (_, h) in &mut scan {
        batches += 1;
        last = Some(h);
    }
    let stop = scan.stop().unwrap_or(ScanStop::End);
    ScanResult { valid_bytes: scan.position(), batches, last, stop }
}

/// Iterator over concatenated v2 batches in a byte slice (e.g. a Produce `records`
/// field), yielding `(offset_in_buf, header)` for each; on the first malformed batch
/// it yields `Err` once and then ends. Checks header and length only; call
/// [`verify_crc`] on `&buf[off..off + h.total_size()]` to check the CRC. Stored data
/// (recovery) is walked by [`BatchScan`] instead, which checks every CRC and tells a torn
/// tail or zero padding from a corrupt batch.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> BatchIter<'a> {
    /// Iterates the batches of `buf` from its start (works for `&Bytes` via deref).
    pub fn new(buf: &'a [u8]) -> Self {
        BatchIter { buf, pos: 0, done: false }
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<(usize, RecordBatchHeader), BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.buf.len() {
            return None;
        }
        match RecordBatchHeader::parse(&self.buf[self.pos..]) {
            Ok(h) => {
                let at = self.pos;
                self.pos += h.total_size();
                Some(Ok((at, h)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// `(offset, timestamp)` of every record of one record batch (`batch` holds exactly
/// one v2 batch), decompressing it if needed, with the bound of
/// [`super::decompress`] (a batch stored in a topic that never decodes them can be a
/// decompression bomb). Records of a LogAppendTime batch all carry the batch's max
/// timestamp, as Kafka reads them. Used by ListOffsets, which names records, not batches
/// (KIP-734 and KAFKA-16310). Errors: the batch does not decode (message).
pub fn record_timestamps(batch: &bytes::Bytes) -> Result<Vec<(i64, i64)>, String> {
    let decoded = super::records::decode_records(batch).map_err(|e| e.to_string())?;
    Ok(decoded.records.iter().map(|r| (r.offset, r.timestamp)).collect())
}

/// Test and benchmark helper: assembles a valid, uncompressed v2 batch.
#[doc(hidden)]
pub mod testing {
    /// Parameters of a synthetic batch.
    #[derive(Debug, Clone)]
    pub struct BatchSpec {
        /// baseOffset written into the batch.
        pub base_offset: i64,
        /// Number of records (>= 1).
        pub records: usize,
        /// Value size of each record in bytes.
        pub value_len: usize,
        /// Timestamp of record i is `base_timestamp + i`.
        pub base_timestamp: i64,
        /// producerId (-1 = not idempotent).
        pub producer_id: i64,
        /// producerEpoch.
        pub producer_epoch: i16,
        /// baseSequence.
        pub base_sequence: i32,
        /// Attribute bits.
        pub attributes: i16,
    }

    impl Default for BatchSpec {
        fn default() -> Self {
            BatchSpec {
                base_offset: 0,
                records: 1,
                value_len: 10,
                base_timestamp: 1_700_000_000_000,
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
                attributes: 0,
            }
        }
    }

    fn varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            if z < 0x80 {
                out.push(z as u8);
                return;
            }
            out.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
    }

    /// Builds the batch described by `spec`; record values are filled with
    /// `(record index + value byte index) as u8`.
    pub fn build_batch(spec: &BatchSpec) -> Vec<u8> {
        let mut records = Vec::new();
        for i in 0..spec.records {
            let mut r = Vec::new();
            r.push(0u8); // record attributes
            varint(&mut r, i as i64); // timestamp delta
            varint(&mut r, i as i64); // offset delta
            varint(&mut r, -1); // key length (null)
            varint(&mut r, spec.value_len as i64);
            r.extend((0..spec.value_len).map(|j| (i + j) as u8));
            varint(&mut r, 0); // headers count
            varint(&mut records, r.len() as i64);
            records.extend_from_slice(&r);
        }
        let mut b = Vec::with_capacity(61 + records.len());
        b.extend_from_slice(&spec.base_offset.to_be_bytes());
        b.extend_from_slice(&((49 + records.len()) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // leader epoch
        b.push(2);
        b.extend_from_slice(&0u32.to_be_bytes()); // crc placeholder
        b.extend_from_slice(&spec.attributes.to_be_bytes());
        b.extend_from_slice(&((spec.records as i32 - 1).max(0)).to_be_bytes());
        b.extend_from_slice(&spec.base_timestamp.to_be_bytes());
        let max_ts = spec.base_timestamp + (spec.records as i64 - 1).max(0);
        b.extend_from_slice(&max_ts.to_be_bytes());
        b.extend_from_slice(&spec.producer_id.to_be_bytes());
        b.extend_from_slice(&spec.producer_epoch.to_be_bytes());
        b.extend_from_slice(&spec.base_sequence.to_be_bytes());
        b.extend_from_slice(&(spec.records as i32).to_be_bytes());
        b.extend_from_slice(&records);
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{build_batch, BatchSpec};
    use super::*;

    fn spec(records: usize) -> BatchSpec {
        BatchSpec {
            base_offset: 0,
            records,
            value_len: 7,
            base_timestamp: 1_000,
            producer_id: 42,
            producer_epoch: 3,
            base_sequence: 10,
            attributes: 0,
        }
    }

    #[test]
    fn parse_exact_fields() {
        let b = build_batch(&spec(3));
        let h = RecordBatchHeader::parse(&b).unwrap();
        // each record: attrs 1 + ts 1 + off 1 + keylen 1 + vallen 1 + 7 + headers 1 = 13,
        // + len varint 1
        assert_eq!(b.len(), 61 + 3 * 14);
        assert_eq!(h.base_offset, 0);
        assert_eq!(h.batch_length, (b.len() - 12) as i32);
        assert_eq!(h.total_size(), b.len());
        assert_eq!(h.magic, 2);
        assert_eq!(h.attributes, 0);
        assert_eq!(h.last_offset_delta, 2);
        assert_eq!(h.base_timestamp, 1_000);
        assert_eq!(h.max_timestamp, 1_002);
        assert_eq!(h.producer_id, 42);
        assert_eq!(h.producer_epoch, 3);
        assert_eq!(h.base_sequence, 10);
        assert_eq!(h.records_count, 3);
        assert_eq!(h.last_offset(), 2);
        assert_eq!(h.next_offset(), 3);
        assert_eq!(h.last_sequence(), 12);
        assert_eq!(h.compression(), 0);
        assert!(!h.is_transactional() && !h.is_control() && !h.timestamp_type_log_append());
        assert_eq!(h.crc, crc32c::crc32c(&b[21..]));
        assert!(verify_crc(&b));
    }

    #[test]
    fn attribute_bits() {
        let mut s = spec(1);
        s.attributes = 4 | ATTR_TRANSACTIONAL | ATTR_CONTROL;
        let h = RecordBatchHeader::parse(&build_batch(&s)).unwrap();
        assert_eq!(h.compression(), 4);
        assert!(h.is_transactional());
        assert!(h.is_control());
        assert!(!h.timestamp_type_log_append());
    }

    #[test]
    fn sequence_wraps() {
        let mut s = spec(3);
        s.base_sequence = i32::MAX - 1;
        let h = RecordBatchHeader::parse(&build_batch(&s)).unwrap();
        assert_eq!(h.last_sequence(), 0);
    }

    #[test]
    fn parse_errors() {
        let b = build_batch(&spec(2));
        assert_eq!(RecordBatchHeader::parse(&b[..10]), Err(BatchError::Truncated));
        assert_eq!(RecordBatchHeader::parse(&b[..40]), Err(BatchError::Truncated));
        assert_eq!(RecordBatchHeader::parse(&b[..b.len() - 1]), Err(BatchError::Truncated));
        let mut m = b.clone();
        m[16] = 1;
        assert_eq!(RecordBatchHeader::parse(&m[..17]), Err(BatchError::UnsupportedMagic(1)));
        let mut l = b.clone();
        l[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert_eq!(RecordBatchHeader::parse(&l), Err(BatchError::InvalidLength(48)));
        l[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(RecordBatchHeader::parse(&l), Err(BatchError::InvalidLength(-5)));
        let mut c = b.clone();
        *c.last_mut().unwrap() ^= 1;
        assert!(!verify_crc(&c));
    }

    #[test]
    fn offset_rewrite_keeps_crc() {
        let mut b = build_batch(&spec(2));
        set_base_offset(&mut b, 1234567);
        let h = RecordBatchHeader::parse(&b).unwrap();
        assert_eq!(h.base_offset, 1234567);
        assert_eq!(h.last_offset(), 1234568);
        assert!(verify_crc(&b));
    }

    #[test]
    fn log_append_time_recomputes_crc() {
        let mut b = build_batch(&spec(2));
        let before = RecordBatchHeader::parse(&b).unwrap();
        set_log_append_time(&mut b, 99_999);
        let h = RecordBatchHeader::parse(&b).unwrap();
        assert!(h.timestamp_type_log_append());
        assert_eq!(h.max_timestamp, 99_999);
        assert_eq!(h.base_timestamp, before.base_timestamp);
        assert_ne!(h.crc, before.crc);
        assert!(verify_crc(&b));
    }

    #[test]
    fn matches_kafka_protocol_encoder() {
        use bytes::{Bytes, BytesMut};
        use kafka_protocol::records::*;
        let records: Vec<Record> = (0..4)
            .map(|i| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: 7,
                producer_epoch: 1,
                timestamp_type: TimestampType::Creation,
                offset: i,
                sequence: 5 + i as i32,
                timestamp: 500 + i,
                key: None,
                value: Some(Bytes::from_static(b"hello")),
                headers: Default::default(),
            })
            .collect();
        let mut buf = BytesMut::new();
        let opts = RecordEncodeOptions { version: 2, compression: Compression::None };
        RecordBatchEncoder::encode(&mut buf, records.iter(), &opts).unwrap();
        let h = RecordBatchHeader::parse(&buf).unwrap();
        assert_eq!(h.total_size(), buf.len());
        assert_eq!(h.records_count, 4);
        assert_eq!(h.last_offset_delta, 3);
        assert_eq!(h.producer_id, 7);
        assert_eq!(h.base_sequence, 5);
        assert_eq!(h.max_timestamp, 503);
        assert!(verify_crc(&buf));
        set_base_offset(&mut buf, 100);
        set_log_append_time(&mut buf, 777);
        // kafka-protocol's decoder verifies the CRC.
        let mut bytes = buf.freeze();
        let set = RecordBatchDecoder::decode(&mut bytes).unwrap();
        assert_eq!(set.records.len(), 4);
        assert_eq!(set.records[0].offset, 100);
        assert_eq!(set.records[3].offset, 103);
    }

    #[test]
    fn scan_and_every_truncation() {
        let mut log = Vec::new();
        let mut ends = vec![0usize];
        for i in 0..3 {
            let mut s = spec(i + 1);
            s.base_offset = log.len() as i64;
            log.extend(build_batch(&s));
            ends.push(log.len());
        }
        let full = scan_batches(&log);
        assert_eq!(full.valid_bytes, log.len());
        assert_eq!(full.batches, 3);
        assert_eq!(full.stop, ScanStop::End);
        assert_eq!(full.last.unwrap().records_count, 3);
        for cut in 0..=log.len() {
            let r = scan_batches(&log[..cut]);
            let expect = ends.iter().filter(|&&e| e <= cut).count() - 1;
            assert_eq!(r.batches, expect, "cut {cut}");
            assert_eq!(r.valid_bytes, ends[expect], "cut {cut}");
        }
        // zero padding after valid data ends the scan there
        let mut padded = log.clone();
        padded.extend(std::iter::repeat_n(0, 4096));
        let r = scan_batches(&padded);
        assert_eq!((r.valid_bytes, r.batches), (log.len(), 3));
        assert_eq!(r.stop, ScanStop::ZeroPadding);
        // a flipped byte in the last batch stops before it
        let mut bad = log.clone();
        bad[ends[2] + 30] ^= 0xff;
        let r = scan_batches(&bad);
        assert_eq!((r.valid_bytes, r.batches), (ends[2], 2));
        assert_eq!(r.stop, ScanStop::Corrupt(BatchError::CorruptCrc));
    }

    /// Three batches of 1, 2 and 3 records (base offsets 10, 20, 30) and the end position
    /// of each: `(log, [0, end of batch 0, end of batch 1, end of batch 2])`.
    fn three_batches() -> (Vec<u8>, Vec<usize>) {
        let mut log = Vec::new();
        let mut ends = vec![0usize];
        for i in 0..3 {
            let mut s = spec(i + 1);
            s.base_offset = 10 * (i as i64 + 1);
            log.extend(build_batch(&s));
            ends.push(log.len());
        }
        (log, ends)
    }

    /// Everything a scan reports: the batches found (position, header), the stop position
    /// and the stop reason.
    type Found = (Vec<(usize, RecordBatchHeader)>, usize, ScanStop);

    fn scan_whole(data: &[u8]) -> Found {
        let mut scan = BatchScan::new(data, 0);
        let found: Vec<_> = scan.by_ref().collect();
        (found, scan.position(), scan.stop().unwrap())
    }

    /// Scans `data` the way `Segment::scan` reads a file: a slice of `chunk` bytes from
    /// the last stop position, a longer one when the batch there needs it.
    fn scan_in_chunks(data: &[u8], chunk: usize) -> Found {
        let mut found = Vec::new();
        let (mut pos, mut want) = (0usize, chunk);
        for _ in 0..=data.len() + 1 {
            let end = (pos + want).min(data.len());
            let mut scan = BatchScan::new(&data[pos..end], (data.len() - end) as u64);
            found.extend(scan.by_ref().map(|(at, h)| (pos + at, h)));
            pos += scan.position();
            match scan.stop().unwrap() {
                ScanStop::NeedMore { need } => {
                    assert!(need > end - pos, "NeedMore must ask for more bytes");
                    want = need.max(chunk);
                }
                stop => return (found, pos, stop),
            }
        }
        panic!("chunked scan made no progress (chunk {chunk})");
    }

    #[test]
    fn scan_slice_ending_inside_a_batch_asks_for_more() {
        let (log, ends) = three_batches();
        let second = ends[2] - ends[1];
        let after = |cut: usize| (log.len() - cut) as u64;
        // cut inside the second batch's header: read the header (61 bytes) again
        let cut = ends[1] + 10;
        let mut scan = BatchScan::new(&log[..cut], after(cut));
        assert_eq!(scan.by_ref().map(|(at, h)| (at, h.base_offset)).collect::<Vec<_>>(), [(0, 10)]);
        assert_eq!(scan.position(), ends[1]);
        assert_eq!(scan.stop(), Some(ScanStop::NeedMore { need: RECORD_BATCH_OVERHEAD }));
        // cut inside its records: the header says how much to read
        let cut = ends[1] + 70;
        let mut scan = BatchScan::new(&log[..cut], after(cut));
        assert_eq!(scan.by_ref().count(), 1);
        assert_eq!(scan.stop(), Some(ScanStop::NeedMore { need: second }));
        // reading on from the stop position with that many bytes finds the batch
        let mut scan = BatchScan::new(&log[ends[1]..ends[1] + second], after(ends[2]));
        assert_eq!(scan.next().map(|(at, h)| (at, h.base_offset)), Some((0, 20)));
        // a slice ending exactly at a batch boundary, with more data after it
        let mut scan = BatchScan::new(&log[..ends[1]], after(ends[1]));
        assert_eq!(scan.by_ref().count(), 1);
        assert_eq!(scan.stop(), Some(ScanStop::NeedMore { need: RECORD_BATCH_OVERHEAD }));
        // ... and with nothing after it
        let mut scan = BatchScan::new(&log, 0);
        assert_eq!(scan.by_ref().count(), 3);
        assert_eq!((scan.position(), scan.stop()), (log.len(), Some(ScanStop::End)));
    }

    #[test]
    fn scan_in_chunks_equals_whole_scan() {
        let (log, ends) = three_batches();
        let mut padded = log.clone();
        padded.resize(4096, 0);
        let mut corrupt = padded.clone();
        corrupt[ends[1] + 40] ^= 0xff;
        let mut torn = log.clone();
        torn.truncate(ends[2] - 5);
        let mut short_padding = log.clone();
        short_padding.extend([0u8; 20]);
        for (name, data) in [
            ("clean", &log),
            ("padded", &padded),
            ("corrupt", &corrupt),
            ("torn", &torn),
            ("short padding", &short_padding),
        ] {
            let whole = scan_whole(data);
            for chunk in (1..=log.len() + 1).chain([4096]) {
                assert_eq!(scan_in_chunks(data, chunk), whole, "{name}, chunk {chunk}");
            }
        }
    }

    #[test]
    fn scan_torn_tail() {
        let (log, ends) = three_batches();
        let last = ends[3] - ends[2];
        for cut in ends[2] + 1..ends[3] {
            let r = scan_batches(&log[..cut]);
            assert_eq!((r.valid_bytes, r.batches), (ends[2], 2), "cut {cut}");
            assert_eq!(r.last.map(|h| h.base_offset), Some(20));
            let need =
                if cut - ends[2] < RECORD_BATCH_OVERHEAD { RECORD_BATCH_OVERHEAD } else { last };
            // a torn write of only zero bytes (here the high bytes of baseOffset 30) is
            // indistinguishable from zero padding
            let expect = if log[ends[2]..cut].iter().all(|&b| b == 0) {
                ScanStop::ZeroPadding
            } else {
                ScanStop::TornTail { need }
            };
            assert_eq!(r.stop, expect, "cut {cut}");
        }
        // a garbage length pointing past the end of the data is a torn tail too
        let mut big = log.clone();
        big[ends[2] + 8..ends[2] + 12].copy_from_slice(&1_000_000i32.to_be_bytes());
        let r = scan_batches(&big);
        assert_eq!(r.valid_bytes, ends[2]);
        assert_eq!(r.stop, ScanStop::TornTail { need: 1_000_012 });
    }

    #[test]
    fn scan_stops_at_crc_mismatch_mid_file() {
        let (log, ends) = three_batches();
        let mut bad = log.clone();
        bad[ends[1] + 40] ^= 0xff; // a record byte of the middle batch
        let r = scan_batches(&bad);
        // the valid batch after it is not reported: the log ends before the corrupt batch
        assert_eq!((r.valid_bytes, r.batches), (ends[1], 1));
        assert_eq!(r.stop, ScanStop::Corrupt(BatchError::CorruptCrc));
        let mut magic = log.clone();
        magic[ends[1] + 16] = 1;
        assert_eq!(scan_batches(&magic).stop, ScanStop::Corrupt(BatchError::UnsupportedMagic(1)));
        let mut length = log.clone();
        length[ends[1] + 8..ends[1] + 12].copy_from_slice(&48i32.to_be_bytes());
        let r = scan_batches(&length);
        assert_eq!(
            (r.valid_bytes, r.stop),
            (ends[1], ScanStop::Corrupt(BatchError::InvalidLength(48)))
        );
    }

    #[test]
    fn scan_zero_padding_is_end_of_data_not_bad_magic() {
        let (log, _) = three_batches();
        // a DMA file is zero padded to 4 KiB after its last batch
        let mut padded = log.clone();
        padded.resize(4096, 0);
        let r = scan_batches(&padded);
        assert_eq!((r.valid_bytes, r.batches), (log.len(), 3));
        assert_eq!(r.stop, ScanStop::ZeroPadding);
        assert_eq!(r.stop.to_string(), "zero padding after the last batch (end of data)");
        // padding shorter than a header (even shorter than the magic byte) at the end
        for n in [1, 16, 17, 60] {
            let mut p = log.clone();
            p.extend(std::iter::repeat_n(0, n));
            let r = scan_batches(&p);
            assert_eq!((r.valid_bytes, r.stop), (log.len(), ScanStop::ZeroPadding), "{n}");
        }
        // fewer than 61 zero bytes in the slice but more data after it: read on
        let mut scan = BatchScan::new(&padded[..log.len() + 20], 100);
        assert_eq!(scan.by_ref().count(), 3);
        assert_eq!(scan.stop(), Some(ScanStop::NeedMore { need: RECORD_BATCH_OVERHEAD }));
        // zeros with a non-zero byte inside the header are not padding
        let mut p = padded.clone();
        p[log.len() + 3] = 1;
        assert_eq!(scan_batches(&p).stop, ScanStop::Corrupt(BatchError::UnsupportedMagic(0)));
    }

    #[test]
    fn iter_batches() {
        let a = build_batch(&spec(1));
        let b = build_batch(&spec(5));
        let mut buf = a.clone();
        buf.extend(&b);
        let v: Vec<_> = BatchIter::new(&buf).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].unwrap().0, 0);
        assert_eq!(v[1].unwrap().0, a.len());
        assert_eq!(v[1].unwrap().1.records_count, 5);
        buf.push(0);
        let v: Vec<_> = BatchIter::new(&buf).collect();
        assert_eq!(v.len(), 3);
        assert_eq!(v[2], Err(BatchError::Truncated));
        let bytes = bytes::Bytes::from(a);
        assert_eq!(BatchIter::new(&bytes).count(), 1);
    }

    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let valid = build_batch(&spec(2));
        for n in 0..3000 {
            let len = (next() % 200) as usize;
            let mut g: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if n % 2 == 0 && len > 17 {
                g[16] = 2; // make magic pass more often
                let bl = (next() % 300) as i32;
                if len > 12 {
                    g[8..12].copy_from_slice(&bl.to_be_bytes());
                }
            }
            if n % 3 == 0 {
                // mutate a valid batch
                g = valid.clone();
                let i = (next() as usize) % g.len();
                g[i] = next() as u8;
            }
            let _ = RecordBatchHeader::parse(&g);
            let _ = verify_crc(&g);
            let _ = scan_batches(&g);
            let _ = BatchIter::new(&g).count();
            let chunk = 1 + (next() % 90) as usize;
            assert_eq!(scan_in_chunks(&g, chunk), scan_whole(&g), "input {n}, chunk {chunk}");
        }
    }

    /// ListOffsets by timestamp decodes stored batches that produce never decoded (a
    /// plain topic): a bomb among them is an error, not gigabytes of memory.
    #[test]
    fn record_timestamps_refuses_a_batch_claiming_gigabytes() {
        let records = [(None, Some(bytes::Bytes::from_static(b"v")), 7)];
        let snappy = kafka_protocol::records::Compression::Snappy;
        let mut b = crate::protocol::records::encode_plain_batch(records, snappy).unwrap().to_vec();
        let at = RECORD_BATCH_OVERHEAD + 16 + 4; // xerial header, first block length
        b[at..at + 5].copy_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        let e = record_timestamps(&bytes::Bytes::from(b)).unwrap_err();
        assert!(e.ends_with("claims 4294967295 uncompressed bytes"), "{e}");
    }

    #[test]
    fn record_timestamps_of_compressed_and_plain_batches() {
        use kafka_protocol::records::{
            Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
        };
        let record = |offset: i64, timestamp: i64| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset,
            // One batch needs offset - sequence constant across its records.
            sequence: (offset - 40) as i32,
            timestamp,
            key: None,
            value: Some(bytes::Bytes::from_static(b"v")),
            headers: Default::default(),
        };
        let records = [record(40, 10), record(41, 30), record(42, 20)];
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let mut buf = bytes::BytesMut::new();
            let options = RecordEncodeOptions { version: 2, compression };
            RecordBatchEncoder::encode(&mut buf, records.iter(), &options).unwrap();
            let got = record_timestamps(&buf.freeze()).unwrap();
            assert_eq!(got, vec![(40, 10), (41, 30), (42, 20)], "{compression:?}");
        }
        let plain = bytes::Bytes::from(build_batch(&BatchSpec {
            base_offset: 5,
            records: 2,
            base_timestamp: 7,
            ..spec(2)
        }));
        assert_eq!(record_timestamps(&plain).unwrap(), vec![(5, 7), (6, 8)]);
        assert!(record_timestamps(&plain.slice(..30)).is_err());
    }
}
