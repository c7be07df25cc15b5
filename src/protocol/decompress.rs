//! Decompressing a record batch's records section with a bound on the output, so that
//! a small batch cannot make the broker allocate gigabytes (a "decompression bomb").
//!
//! kafka-protocol's decompressors trust the input: its snappy reader allocates, zeroed,
//! whatever uncompressed length a block's header claims (up to 4 GiB from 5 bytes), and
//! the gzip, lz4 and zstd readers grow their output until the stream ends (zstd turns a
//! few bytes into 128 KiB per block). Kafka never holds a batch's records in one buffer:
//! it streams them record by record. shardlog decodes a whole section at once (produce
//! validation for compacted topics or a topic `compression.type`, the cleaner,
//! control records), so it reads through the same codec crates but stops at
//! [`MAX_DECOMPRESSED_BYTES`]: a section that would be larger is refused as a codec
//! error (CORRUPT_MESSAGE on produce).
//!
//! Codecs and framings are those of the protocol guide's "Record Batch" section: gzip
//! (RFC 1952), snappy in the xerial framing the Java client writes (or raw snappy,
//! which Java's reader also accepts), lz4 frames, zstd frames.

use std::io::Read;

use bytes::Bytes;

/// The largest uncompressed records section decoded, bytes (128 MiB). A batch is at
/// most `max.message.bytes` compressed (1 MiB by default); only a compression ratio
/// above 128:1 reaches this, which real records do not.
pub const MAX_DECOMPRESSED_BYTES: usize = 128 << 20;

/// The xerial snappy stream header: magic, version 1, compatible version 1.
const XERIAL_MAGIC: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";

/// `raw` (a records section compressed with `codec`, attribute bits 0-2: 1 gzip,
/// 2 snappy, 3 lz4, 4 zstd) decompressed, at most `limit` bytes. Errors (a message for
/// [`super::records::RecordsError::Codec`]): the stream is invalid, or its output
/// would pass `limit`. Codec 0 and unknown codecs are the caller's to handle.
pub fn decompress(codec: u8, raw: &[u8], limit: usize) -> Result<Bytes, String> {
    match codec {
        // every member, as Java's GZIPInputStream reads concatenated gzip streams
        1 => read_bounded(flate2::read::MultiGzDecoder::new(raw), limit, "gzip"),
        2 => snappy(raw, limit),
        3 => {
            let d = lz4::Decoder::new(raw).map_err(|e| format!("lz4: {e}"))?;
            read_bounded(d, limit, "lz4")
        }
        4 => {
            let d = zstd::stream::read::Decoder::new(raw).map_err(|e| format!("zstd: {e}"))?;
            read_bounded(d, limit, "zstd")
        }
        c => Err(format!("no decompressor for codec {c}")),
    }
}

fn too_large(what: &str, limit: usize) -> String {
    format!("{what}: the records decompress to more than {limit} bytes")
}

/// Everything `r` yields, refused once it passes `limit` bytes.
fn read_bounded(r: impl Read, limit: usize, what: &str) -> Result<Bytes, String> {
    let mut out = Vec::new();
    r.take(limit as u64 + 1).read_to_end(&mut out).map_err(|e| format!("{what}: {e}"))?;
    if out.len() > limit {
        return Err(too_large(what, limit));
    }
    Ok(Bytes::from(out))
}

/// A snappy block of `len` bytes yields at most 22 x `len` (its densest element, a
/// 3-byte copy, yields 64 bytes), so a block claiming more is corrupt: refused before
/// its claim is allocated.
fn check_ratio(claimed: usize, len: usize) -> Result<(), String> {
    if claimed > len.saturating_mul(32).saturating_add(64) {
        return Err(format!("snappy: a block of {len} bytes claims {claimed} uncompressed bytes"));
    }
    Ok(())
}

/// Snappy: xerial framing (header, then blocks of `u32` big-endian compressed length
/// and a raw snappy block) when the header is there, else one raw snappy block, as
/// Java's `SnappyInputStream` reads it. Each block's claimed length is checked against
/// what is left of `limit` before anything is allocated.
fn snappy(raw: &[u8], limit: usize) -> Result<Bytes, String> {
    let block_len =
        |block: &[u8]| snap::raw::decompress_len(block).map_err(|e| format!("snappy: {e}"));
    let Some(mut rest) = raw.strip_prefix(XERIAL_MAGIC.as_slice()) else {
        let n = block_len(raw)?;
        check_ratio(n, raw.len())?;
        if n > limit {
            return Err(too_large("snappy", limit));
        }
        let mut out = vec![0; n];
        snap::raw::Decoder::new().decompress(raw, &mut out).map_err(|e| format!("snappy: {e}"))?;
        return Ok(Bytes::from(out));
    };
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (len, after) =
            rest.split_first_chunk::<4>().ok_or("snappy: a block length cut short")?;
        let len = u32::from_be_bytes(*len) as usize;
        if len > after.len() {
            return Err("snappy: a block past the end of the records".into());
        }
        let (block, after) = after.split_at(len);
        let n = block_len(block)?;
        check_ratio(n, block.len())?;
        if n > limit - out.len() {
            return Err(too_large("snappy", limit));
        }
        let start = out.len();
        out.resize(start + n, 0);
        let got = snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(|e| format!("snappy: {e}"))?;
        out.truncate(start + got);
        rest = after;
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy, Zstd};

    fn compress(codec: u8, plain: &[u8]) -> Vec<u8> {
        let mut out = bytes::BytesMut::new();
        let put = |b: &mut bytes::BytesMut| {
            b.extend_from_slice(plain);
            Ok(())
        };
        match codec {
            1 => Gzip::compress(&mut out, put),
            2 => Snappy::compress(&mut out, put),
            3 => Lz4::compress(&mut out, put),
            4 => Zstd::compress(&mut out, put),
            _ => unreachable!(),
        }
        .unwrap();
        out.to_vec()
    }

    #[test]
    fn every_codec_round_trips_up_to_the_limit_and_refuses_one_byte_more() {
        let plain: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for codec in 1..=4u8 {
            let c = compress(codec, &plain);
            assert_eq!(decompress(codec, &c, plain.len()).unwrap(), plain, "codec {codec}");
            let e = decompress(codec, &c, plain.len() - 1).unwrap_err();
            assert!(e.ends_with("decompress to more than 99999 bytes"), "codec {codec}: {e}");
        }
    }

    #[test]
    fn a_snappy_block_claiming_gigabytes_is_refused_before_allocating() {
        // xerial header, one 5-byte block whose varint preamble claims 0xFFFF_FFFF bytes
        let mut raw = XERIAL_MAGIC.to_vec();
        raw.extend_from_slice(&5u32.to_be_bytes());
        raw.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        let e = decompress(2, &raw, MAX_DECOMPRESSED_BYTES).unwrap_err();
        assert_eq!(e, "snappy: a block of 5 bytes claims 4294967295 uncompressed bytes");
        // the same block as raw snappy
        let e = decompress(2, &raw[20..], MAX_DECOMPRESSED_BYTES).unwrap_err();
        assert_eq!(e, "snappy: a block of 5 bytes claims 4294967295 uncompressed bytes");
        // a claim within the ratio but past the limit
        let mut raw = XERIAL_MAGIC.to_vec();
        raw.extend_from_slice(&40u32.to_be_bytes());
        raw.extend_from_slice(&[0xe8, 0x07]); // claims 1000 bytes
        raw.extend_from_slice(&[0; 38]);
        let e = decompress(2, &raw, 999).unwrap_err();
        assert_eq!(e, "snappy: the records decompress to more than 999 bytes");
    }

    #[test]
    fn concatenated_gzip_members_are_all_read() {
        let mut two = compress(1, b"first ");
        two.extend(compress(1, b"second"));
        assert_eq!(decompress(1, &two, 1 << 20).unwrap(), &b"first second"[..]);
    }

    #[test]
    fn a_zstd_bomb_stops_at_the_limit() {
        let zeros = vec![0u8; 4 << 20];
        let c = compress(4, &zeros);
        assert!(c.len() < 1024, "{} bytes", c.len());
        let e = decompress(4, &c, 1 << 20).unwrap_err();
        assert_eq!(e, "zstd: the records decompress to more than 1048576 bytes");
    }

    #[test]
    fn truncated_snappy_framing_is_an_error() {
        let c = compress(2, b"hello hello hello");
        let e = decompress(2, &c[..c.len() - 3], 1 << 20).unwrap_err();
        assert_eq!(e, "snappy: a block past the end of the records");
        let e = decompress(2, &c[..18], 1 << 20).unwrap_err();
        assert_eq!(e, "snappy: a block length cut short");
    }
}
