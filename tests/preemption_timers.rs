//! The vendored glommio's preempt timer (SHARDLOG-PATCH.md, change 6): while the
//! executor runs, an armed latency-ring timer is kept across trips through the reactor
//! when it fires no later than the one glommio would arm, instead of being cancelled
//! and armed again every loop. These tests pin the two ways that could go wrong: a timer armed before a sleep
//! for a far-away user timer must not be kept as the preempt timer once the executor
//! runs again (preemption would stop for seconds), and user timers must still wake a
//! sleeping executor.
//!
//! `a_task_woken_by_its_timer_runs_even_when_a_kept_timer_preempts_first` pins change
//! 8, which fixed a hang change 6 had brought in.
//!
//! Two more come with session 23's further changes to the same trip (the throughput
//! timer kept, the new latency timer submitted with the old one's cancellation; see
//! SHARDLOG-PATCH.md, change 6):
//! `a_busy_task_is_preempted_by_io_completions` (the throughput timer still preempts
//! a task while I/O completes) and `short_user_timers_wake_a_sleeping_executor` (a
//! timer that fires on the way to sleep still wakes the executor).

use std::time::{Duration, Instant};

use glommio::channels::shared_channel;
use glommio::{Latency, LocalExecutorBuilder, Shares};

/// Preempt timer of the executors below.
const PREEMPT: Duration = Duration::from_millis(20);

/// How long the busy task runs, and the fewest preemptions it must see in that time
/// (one every `PREEMPT` would be 15).
const BUSY: Duration = Duration::from_millis(300);
const MIN_PREEMPTIONS: u32 = 5;

#[test]
fn preemption_resumes_after_a_sleep_armed_for_a_far_user_timer() {
    let (wake_tx, wake_rx) = shared_channel::new_bounded::<u32>(1);
    // Woken by another thread, not by a timer: the executor sleeps with only the
    // 5 s timer below armed, and that armed timer is still pending when it runs.
    let waker = std::thread::spawn(move || {
        LocalExecutorBuilder::default()
            .name("waker")
            .spawn(move || async move {
                let tx = wake_tx.connect().await;
                glommio::timer::sleep(Duration::from_millis(100)).await;
                tx.send(1).await.expect("wake sent");
            })
            .expect("waker executor")
            .join()
            .expect("waker ran");
    });
    let preemptions = LocalExecutorBuilder::default()
        .name("busy")
        .preempt_timer(PREEMPT)
        .spawn(move || async move {
            let far = glommio::spawn_local(glommio::timer::sleep(Duration::from_secs(5)));
            let rx = wake_rx.connect().await;
            assert_eq!(rx.recv().await, Some(1));
            let tq = glommio::executor().create_task_queue(
                Shares::default(),
                Latency::NotImportant,
                "busy",
            );
            let busy = glommio::spawn_local_into(
                async {
                    let started = Instant::now();
                    let mut preemptions = 0;
                    while started.elapsed() < BUSY {
                        if glommio::executor().need_preempt() {
                            preemptions += 1;
                            glommio::yield_if_needed().await;
                        }
                    }
                    preemptions
                },
                tq,
            )
            .expect("busy task");
            let preemptions = busy.await;
            far.cancel().await;
            preemptions
        })
        .expect("busy executor")
        .join()
        .expect("busy ran");
    waker.join().expect("waker thread");
    assert!(
        preemptions >= MIN_PREEMPTIONS,
        "{preemptions} preemptions in {BUSY:?} with a {PREEMPT:?} preempt timer"
    );
}

/// Preempt timer of the sleeping executor: long, so that a sleep woken by the armed
/// preempt timer instead of its own would be late by hundreds of ms.
const LONG_PREEMPT: Duration = Duration::from_millis(500);

#[test]
fn user_timers_wake_a_sleeping_executor_after_busy_periods() {
    let late = LocalExecutorBuilder::default()
        .name("sleeper")
        .preempt_timer(LONG_PREEMPT)
        .spawn(|| async {
            let mut latest = Duration::ZERO;
            for round in 0..20u64 {
                // Busy for a while (a preempt timer is armed), then sleep: the
                // sleep's timer is shorter or longer than what is armed.
                let busy_until = Instant::now() + Duration::from_millis(round % 4 * 10);
                while Instant::now() < busy_until {
                    glommio::yield_if_needed().await;
                }
                let want = Duration::from_millis(5 + round % 3 * 20);
                let started = Instant::now();
                glommio::timer::sleep(want).await;
                let took = started.elapsed();
                assert!(took >= want, "round {round}: slept {took:?} for {want:?}");
                latest = latest.max(took - want);
            }
            latest
        })
        .expect("sleeper executor")
        .join()
        .expect("sleeper ran");
    // A sleep that waited for the armed preempt timer (up to 500 ms away) would be
    // late by hundreds of ms; scheduling noise is far below the bound.
    assert!(late < Duration::from_millis(200), "a sleep woke {late:?} late");
}

/// Connections whose readiness polls complete while the busy task below runs: more
/// than glommio's default `ring_depth` (128), so the throughput timer must fire.
const READERS: usize = 300;

#[test]
fn a_busy_task_is_preempted_by_io_completions() {
    use futures_lite::AsyncReadExt;
    use std::io::Write;

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let (start_tx, start_rx) = std::sync::mpsc::channel::<()>();
    // Accepts every reader, waits until the busy task spins, then writes one byte to
    // each: 300 readiness polls complete on the busy executor's main ring.
    let writer = std::thread::spawn(move || {
        let mut accepted = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            accepted.push(listener.accept().expect("accept").0);
        }
        start_rx.recv().expect("busy task started");
        std::thread::sleep(Duration::from_millis(50));
        for stream in &mut accepted {
            stream.write_all(b"x").expect("write one byte");
        }
        accepted
    });
    let (preempted, spun) = LocalExecutorBuilder::default()
        .name("busy-io")
        // No time-based preemption within the test: only completions can preempt.
        .preempt_timer(Duration::from_secs(10))
        .spawn(move || async move {
            let mut readers = Vec::with_capacity(READERS);
            for _ in 0..READERS {
                let mut stream = glommio::net::TcpStream::connect(addr).await.expect("connect");
                readers.push(glommio::spawn_local(async move {
                    let mut byte = [0u8; 1];
                    stream.read_exact(&mut byte).await.expect("one byte");
                }));
            }
            // Let every reader arm its readiness poll before the busy loop starts.
            glommio::timer::sleep(Duration::from_millis(20)).await;
            start_tx.send(()).expect("writer waiting");
            let started = Instant::now();
            let mut preempted = false;
            while started.elapsed() < Duration::from_secs(3) {
                if glommio::executor().need_preempt() {
                    preempted = true;
                    break;
                }
            }
            let spun = started.elapsed();
            for reader in readers {
                reader.await;
            }
            (preempted, spun)
        })
        .expect("busy executor")
        .join()
        .expect("busy ran");
    drop(writer.join().expect("writer thread"));
    assert!(preempted, "no preemption in {spun:?} while {READERS} reads completed");
}

/// Sleeps of 0-39 us: their timer can fire while the reactor is still on its way to
/// sleep (its completion consumed before the executor sleeps), and each must still
/// wake the executor.
#[test]
fn short_user_timers_wake_a_sleeping_executor() {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        LocalExecutorBuilder::default()
            .name("short-sleeper")
            .spawn(|| async {
                for round in 0..3000u64 {
                    glommio::timer::sleep(Duration::from_micros(round % 40)).await;
                }
            })
            .expect("short-sleeper executor")
            .join()
            .expect("short-sleeper ran");
        done_tx.send(()).expect("test waiting");
    });
    // 3,000 sleeps of at most 39 us take well under a second; one that is never woken
    // hangs the executor.
    done_rx.recv_timeout(Duration::from_secs(30)).expect("3,000 short sleeps ended within 30 s");
}

/// SHARDLOG-PATCH.md change 8: an executor must not park while a task queue is
/// runnable. With change 6, the timer a sleep armed for a user timer is kept once the
/// executor runs again; when it fired between the loop's `poll_io` (which had woken the
/// task of that user timer) and the first task queue, glommio saw a preemption before
/// any queue ran, took it for "nothing to run" and parked, leaving the woken task
/// unrun, for ever when nothing else was coming. Seen as a unit test of the log
/// (`wait_for_data_and_flush_policies`, a 5 ms flush timer beside DMA appends) hanging
/// about once in 400 runs beside other test processes.
///
/// Here each of 4 executors has a 1 ms ticker task beside a main task that makes DMA
/// writes extending a file, one after the other, until the ticker has ticked 1,500
/// times: now and then a write's completion wakes the executor just as a tick is due,
/// which is the race. Without change 8 an executor hung (the test failed after its
/// 60 s wait) in 6 runs of 6; with it, 8 of 8 passed in under 2 s.
#[test]
fn a_task_woken_by_its_timer_runs_even_when_a_kept_timer_preempts_first() {
    const EXECUTORS: usize = 4;
    const TICKS: u32 = 1_500;
    let dir = tempfile::tempdir().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for e in 0..EXECUTORS {
        let path = dir.path().join(format!("ticks-{e}"));
        let done_tx = done_tx.clone();
        std::thread::spawn(move || {
            LocalExecutorBuilder::default()
                .name("ticks")
                .spawn(move || async move {
                    let file = glommio::io::DmaFile::create(&path).await.unwrap();
                    let ticked = std::rc::Rc::new(std::cell::Cell::new(0u32));
                    let ticker = {
                        let ticked = ticked.clone();
                        glommio::spawn_local(async move {
                            for _ in 0..TICKS {
                                glommio::timer::sleep(Duration::from_millis(1)).await;
                                ticked.set(ticked.get() + 1);
                            }
                        })
                    };
                    let align = file.alignment() as usize;
                    let mut writes = 0u64;
                    while ticked.get() < TICKS {
                        let mut buf = file.alloc_dma_buffer(align);
                        buf.as_bytes_mut().fill(writes as u8);
                        file.write_at(buf, (writes % 4096) * align as u64).await.unwrap();
                        writes += 1;
                    }
                    ticker.await;
                    file.close().await.unwrap();
                })
                .unwrap()
                .join()
                .unwrap();
            let _ = done_tx.send(e);
        });
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..EXECUTORS {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            done_rx.recv_timeout(left).is_ok(),
            "an executor did not finish its {TICKS} ticks in 30 s: parked with a runnable task"
        );
    }
}

/// SHARDLOG-PATCH.md change 11: on the way to sleep, an armed preempt timer that fires
/// before the next user timer is kept (the sleep ends early, never late), but an
/// executor whose last sleep that timer ended does not keep the next one: an idle
/// executor wakes once for it, then sleeps until its user timer. Here a busy period
/// (a 20 ms preempt timer armed) is followed by a 300 ms sleep with nothing else to do.
/// Keeping the preempt timer on every sleep would wake the executor every 20 ms, 15
/// parks; the rule allows the sleep that the kept timer ended and the one to the user
/// timer (and one more for scheduling noise).
#[test]
fn an_idle_executor_sleeps_until_its_user_timer_after_one_early_wake() {
    let (parks, late) = LocalExecutorBuilder::default()
        .name("idle-sleeper")
        .preempt_timer(PREEMPT)
        .spawn(|| async {
            let mut most_parks = 0;
            let mut latest = Duration::ZERO;
            for round in 0..5 {
                let busy_until = Instant::now() + Duration::from_millis(50);
                while Instant::now() < busy_until {
                    glommio::yield_if_needed().await;
                }
                let want = Duration::from_millis(300);
                let _ = glommio::executor().executor_stats();
                let started = Instant::now();
                glommio::timer::sleep(want).await;
                let took = started.elapsed();
                let parks = glommio::executor().executor_stats().parks();
                assert!(took >= want, "round {round}: slept {took:?} for {want:?}");
                most_parks = most_parks.max(parks);
                latest = latest.max(took - want);
            }
            (most_parks, latest)
        })
        .expect("idle-sleeper executor")
        .join()
        .expect("idle-sleeper ran");
    assert!(parks <= 3, "{parks} parks in a 300 ms sleep with a 20 ms preempt timer");
    assert!(late < Duration::from_millis(100), "a sleep woke {late:?} late");
}
