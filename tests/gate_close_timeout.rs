//! The vendored glommio's `Gate` (SHARDLOG-PATCH.md, change 5): a `close` given up on
//! after a timeout (what the listener does when connections outlast `DRAIN_TIMEOUT` at
//! shutdown) must not make the last task that leaves the gate panic.

use std::rc::Rc;
use std::time::Duration;

use glommio::sync::Gate;
use glommio::LocalExecutorBuilder;

#[test]
fn the_last_task_leaves_a_gate_whose_close_timed_out() {
    let left = LocalExecutorBuilder::default()
        .spawn(|| async {
            let gate = Rc::new(Gate::new());
            let task = gate
                .spawn(async {
                    glommio::timer::sleep(Duration::from_millis(200)).await;
                })
                .expect("the gate is open")
                .detach();
            let closed = glommio::timer::timeout(Duration::from_millis(20), async {
                let _ = gate.close().await;
                Ok(())
            })
            .await;
            assert!(closed.is_err(), "the task still holds the gate");
            // The task leaves the gate after the close future is gone.
            task.await.is_some()
        })
        .expect("executor")
        .join()
        .expect("no panic in the executor");
    assert!(left);
}
