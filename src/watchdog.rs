//! The stall watchdog: notices a shard whose executor has stopped running its tasks.
//!
//! A glommio executor is cooperative: a task that spins or blocks its thread (a hang in
//! the runtime's submission loop was once seen at start-up under disk load, or a
//! blocking syscall that takes minutes) silently stops every connection, partition and
//! group of that core. So every shard runs a heartbeat task, which stores the time in
//! its slot of [`Heartbeats`] every [`BEAT_INTERVAL`]. A plain thread outside the
//! executors ([`spawn`]) looks at the slots. A shard whose heartbeat is older than
//! `--stall-warn-ms` is logged as stalled, once per stall, and again when it runs. One
//! whose heartbeat is older than `--stall-abort-ms` makes the broker log it and abort
//! (SIGABRT, non-zero), as a panic does (see [`crate::crash`]). A broker with a dead
//! core must not go on half-alive; what was acknowledged is on disk, as after `kill -9`.
//!
//! A shard that has not beaten yet counts from when the watchdog started, so a shard
//! that hangs before its first task runs is caught too. A shard that has finished
//! ([`Heartbeats::done`]) is no longer watched.
//!
//! Cost: one timer wake-up and one relaxed atomic store per shard per
//! [`BEAT_INTERVAL`]; the slots are not touched by the data path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often each shard stores its heartbeat.
pub const BEAT_INTERVAL: Duration = Duration::from_millis(100);
/// How often the watchdog thread looks at the heartbeats.
const CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// A slot value: the shard has not beaten yet.
const NOT_STARTED: u64 = 0;
/// A slot value: the shard has finished; it is not watched any more.
const DONE: u64 = u64::MAX;

/// The last heartbeat of every shard, in ms since [`Heartbeats::new`] (plus one, so
/// that 0 can mean "not started"). Shared by the shards and the watchdog thread.
#[derive(Debug)]
pub struct Heartbeats {
    epoch: Instant,
    slots: Box<[AtomicU64]>,
}

impl Heartbeats {
    /// Slots for `nr_shards` shards, none started.
    pub fn new(nr_shards: usize) -> Arc<Heartbeats> {
        let slots = (0..nr_shards).map(|_| AtomicU64::new(NOT_STARTED)).collect();
        Arc::new(Heartbeats { epoch: Instant::now(), slots })
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// Shard `shard` is running its tasks now.
    pub fn beat(&self, shard: usize) {
        if let Some(slot) = self.slots.get(shard) {
            // A finished shard stays finished.
            let _ = slot.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                (v != DONE).then_some(self.now())
            });
        }
    }

    /// Shard `shard` has finished (its executor is about to end): no longer watched.
    pub fn done(&self, shard: usize) {
        if let Some(slot) = self.slots.get(shard) {
            slot.store(DONE, Ordering::Relaxed);
        }
    }

    /// How long ago shard `shard` last beat (since the start if it never has); `None`
    /// once it has finished, or for a shard that does not exist.
    pub fn stalled_for(&self, shard: usize) -> Option<Duration> {
        let last = self.slots.get(shard)?.load(Ordering::Relaxed);
        if last == DONE {
            return None;
        }
        let since = if last == NOT_STARTED { 1 } else { last };
        Some(Duration::from_millis(self.now().saturating_sub(since)))
    }

    /// How many shards are watched.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when there are no shards.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// The heartbeat task of shard `shard`: beats every [`BEAT_INTERVAL`], forever (it
/// ends with its executor). Spawn it first thing on the shard.
pub async fn beat(heartbeats: Arc<Heartbeats>, shard: usize) {
    loop {
        heartbeats.beat(shard);
        glommio::timer::sleep(BEAT_INTERVAL).await;
    }
}

/// What the watchdog does about a stall, by its thresholds (zero: never).
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Log a stall longer than this (`--stall-warn-ms`).
    pub warn: Duration,
    /// Abort the process on a stall longer than this (`--stall-abort-ms`).
    pub abort: Duration,
}

/// What one look at a shard's heartbeat calls for.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to say.
    Fine,
    /// The shard has stalled past the warning threshold (first look of this stall).
    Stalled,
    /// The shard runs again after a stall that was reported.
    Recovered,
    /// The shard has stalled past the abort threshold.
    Abort,
}

/// The verdict for a shard stalled for `stalled` (`None`: finished), given whether its
/// current stall was already reported (`reported`, updated here).
pub fn judge(stalled: Option<Duration>, thresholds: Thresholds, reported: &mut bool) -> Verdict {
    let Some(stalled) = stalled else {
        *reported = false;
        return Verdict::Fine;
    };
    if !thresholds.abort.is_zero() && stalled >= thresholds.abort {
        return Verdict::Abort;
    }
    let over = !thresholds.warn.is_zero() && stalled >= thresholds.warn;
    match (over, *reported) {
        (true, false) => {
            *reported = true;
            Verdict::Stalled
        }
        (false, true) if stalled < BEAT_INTERVAL * 3 => {
            *reported = false;
            Verdict::Recovered
        }
        _ => Verdict::Fine,
    }
}

/// Starts the watchdog thread (nothing when both thresholds are zero). It runs until
/// the process exits.
pub fn spawn(heartbeats: Arc<Heartbeats>, thresholds: Thresholds) -> std::io::Result<()> {
    if thresholds.warn.is_zero() && thresholds.abort.is_zero() {
        return Ok(());
    }
    std::thread::Builder::new().name("watchdog".into()).spawn(move || {
        let mut reported = vec![false; heartbeats.len()];
        loop {
            std::thread::sleep(CHECK_INTERVAL);
            for (shard, reported) in reported.iter_mut().enumerate() {
                let stalled = heartbeats.stalled_for(shard);
                let ms = stalled.map_or(0, |d| d.as_millis() as u64);
                match judge(stalled, thresholds, reported) {
                    Verdict::Fine => {}
                    Verdict::Stalled => tracing::warn!(
                        shard,
                        stalled_ms = ms,
                        "shard has not run its tasks for a while: its connections, partitions \
                         and groups wait (a task that blocks its thread or never yields)"
                    ),
                    Verdict::Recovered => tracing::info!(shard, "shard runs its tasks again"),
                    Verdict::Abort => {
                        tracing::error!(
                            shard,
                            stalled_ms = ms,
                            abort_ms = thresholds.abort.as_millis() as u64,
                            "shard stalled past --stall-abort-ms; aborting the broker \
                             (acknowledged records are on disk, as after kill -9)"
                        );
                        std::process::abort();
                    }
                }
            }
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Thresholds =
        Thresholds { warn: Duration::from_millis(500), abort: Duration::from_millis(2000) };

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    #[test]
    fn a_stall_is_reported_once_then_its_end() {
        let mut reported = false;
        assert_eq!(judge(ms(100), T, &mut reported), Verdict::Fine);
        assert_eq!(judge(ms(600), T, &mut reported), Verdict::Stalled);
        assert_eq!(judge(ms(900), T, &mut reported), Verdict::Fine);
        assert_eq!(judge(ms(50), T, &mut reported), Verdict::Recovered);
        assert!(!reported);
        assert_eq!(judge(ms(50), T, &mut reported), Verdict::Fine);
    }

    #[test]
    fn past_the_abort_threshold_it_aborts_and_zero_means_never() {
        let mut reported = true;
        assert_eq!(judge(ms(2000), T, &mut reported), Verdict::Abort);
        let never = Thresholds { warn: Duration::ZERO, abort: Duration::ZERO };
        let mut reported = false;
        assert_eq!(judge(ms(3_600_000), never, &mut reported), Verdict::Fine);
        assert!(!reported);
    }

    #[test]
    fn a_finished_shard_is_not_watched() {
        let hb = Heartbeats::new(2);
        assert!(hb.stalled_for(0).is_some());
        hb.beat(1);
        hb.done(1);
        hb.beat(1);
        assert_eq!(hb.stalled_for(1), None);
        assert_eq!(hb.stalled_for(2), None);
        let mut reported = false;
        assert_eq!(judge(hb.stalled_for(1), T, &mut reported), Verdict::Fine);
    }

    #[test]
    fn a_shard_that_never_beat_counts_from_the_start() {
        let hb = Heartbeats::new(1);
        std::thread::sleep(Duration::from_millis(30));
        assert!(hb.stalled_for(0).unwrap() >= Duration::from_millis(29));
        hb.beat(0);
        assert!(hb.stalled_for(0).unwrap() < Duration::from_millis(29));
    }
}
