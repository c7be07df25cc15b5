//! Segments leaving a log (retention, DeleteRecords, the cleaner's swap): their blocks
//! are freed on glommio's blocking thread, not on the shard.
//!
//! Unlinking a file that is still open is cheap; what costs is the *last close*, when
//! the kernel frees the file's blocks (about 0.2 s per GB on ext4). A segment's `.log`
//! is last closed when its [`Segment`] drops, which would be on the shard, stalling
//! every connection and partition it serves. So before a segment's files are removed
//! or replaced, [`retire`] opens a second descriptor of its `.log` (through
//! `/proc/self/fd`, which reaches the inode even once it is unlinked), and a background
//! task waits for the reads still holding the segment, closes the shard's descriptor
//! (now not the last one) and drops the second one on the blocking thread.
//!
//! A crash in between loses nothing: the files are already gone from the directory, and
//! the kernel frees the blocks when the process exits.

use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::segment::Segment;

/// How often the task looks whether the last read of a retired segment has finished.
const POLL: Duration = Duration::from_millis(100);
/// Longest the task waits for reads still holding a segment (a cleaner pass can hold
/// its sources for a while); past it the segment is dropped on the shard as before.
const MAX_WAIT: Duration = Duration::from_secs(600);

/// Takes `segments` (already out of their log's segment list, or about to be, but
/// their `.log` files still open) and frees their blocks off the shard once nothing
/// reads them any more. Call it before their files are unlinked or renamed over; if the
/// second descriptor cannot be opened the segment is simply dropped later, on the shard.
pub(super) fn retire(segments: Vec<Rc<Segment>>) {
    if segments.is_empty() {
        return;
    }
    let holds: Vec<std::fs::File> = segments
        .iter()
        .filter_map(|s| std::fs::File::open(format!("/proc/self/fd/{}", s.file.as_raw_fd())).ok())
        .collect();
    glommio::spawn_local(async move {
        let started = Instant::now();
        let mut pending = segments;
        loop {
            // Reads in flight and background read-ahead hold their own `Rc`s.
            let (free, busy): (Vec<_>, Vec<_>) = pending
                .into_iter()
                .partition(|s| Rc::strong_count(s) == 1 && Rc::strong_count(&s.file) == 1);
            for seg in free {
                if let Ok(seg) = Rc::try_unwrap(seg) {
                    let _ = seg.file.close_rc().await;
                }
            }
            pending = busy;
            if pending.is_empty() || started.elapsed() >= MAX_WAIT {
                break;
            }
            glommio::timer::sleep(POLL).await;
        }
        drop(pending);
        let _ = glommio::executor().spawn_blocking(move || drop(holds)).await;
    })
    .detach();
}
