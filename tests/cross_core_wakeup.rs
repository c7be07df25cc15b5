//! The vendored glommio's sleep/wake handshake (SHARDLOG-PATCH.md, change 4): an
//! executor that goes to sleep while another core sends to it must always be woken.
//! Two executors ping-pong over glommio's shared channels, so each parks between
//! messages; a lost wake-up would leave a message unseen until an unrelated timer
//! fires (the 2 s bound below), and the round trip would exceed it.
//!
//! Since change 11 the link between the rings stays armed across sleeps; the test
//! also passes through sleeps that wait on a link armed before.

use std::time::{Duration, Instant};

use glommio::channels::shared_channel;
use glommio::LocalExecutorBuilder;

const ROUND_TRIPS: u32 = 20_000;

#[test]
fn executors_that_sleep_are_woken_by_every_message() {
    // A wake-up lost for good (not even the 2 s timer below wakes the executor, as with
    // a kept link between the rings whose completion went unseen, SHARDLOG-PATCH.md
    // change 11) would hang the test: it runs on a thread and fails after 120 s.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        ping_pong();
        done_tx.send(()).expect("test waiting");
    });
    done_rx.recv_timeout(Duration::from_secs(120)).expect("20,000 round trips ended within 120 s");
}

fn ping_pong() {
    let (ping_tx, ping_rx) = shared_channel::new_bounded::<u32>(1);
    let (pong_tx, pong_rx) = shared_channel::new_bounded::<u32>(1);
    let echo = LocalExecutorBuilder::default()
        .name("echo")
        .spawn(move || async move {
            let (rx, tx) = (ping_rx.connect().await, pong_tx.connect().await);
            while let Some(n) = rx.recv().await {
                tx.send(n).await.expect("pong sent");
            }
        })
        .expect("echo executor");
    let pinger = LocalExecutorBuilder::default()
        .name("ping")
        .spawn(move || async move {
            let (tx, rx) = (ping_tx.connect().await, pong_rx.connect().await);
            let mut slowest = Duration::ZERO;
            for n in 0..ROUND_TRIPS {
                let started = Instant::now();
                tx.send(n).await.expect("ping sent");
                let got =
                    glommio::timer::timeout(Duration::from_secs(2), async { Ok(rx.recv().await) })
                        .await;
                assert_eq!(got.ok().flatten(), Some(n), "round trip {n} lost or late");
                slowest = slowest.max(started.elapsed());
            }
            drop(tx);
            slowest
        })
        .expect("ping executor");
    let slowest = pinger.join().expect("ping executor ran");
    echo.join().expect("echo executor ran");
    assert!(slowest < Duration::from_secs(2), "slowest round trip {slowest:?}");
}
