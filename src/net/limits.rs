//! What the network layer holds back so that memory stays bounded however many
//! clients push however fast: connection counts (`--max-connections`,
//! `--max-connections-per-ip`, Kafka's `max.connections` / `max.connections.per.ip`)
//! and the bytes of requests read but not yet answered (`--queued-max-request-bytes`,
//! Kafka's `queued.max.request.bytes`, and a per-connection share of it).
//!
//! A request's bytes are reserved from its connection's budget when its 4-byte size
//! prefix has been read, before its body is read, and from its shard's budget once the
//! body is in; both are given back once its response has been written (for `acks=0`
//! produce, which has none: once its appends have finished). While a reservation waits the connection reads nothing more: the
//! client's writes back up into its socket buffer and then into the client, as with
//! Kafka's muted channels. So the bytes held are at most the shard's budget plus one
//! frame per connection being read.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use futures_channel::oneshot;

/// The connection counts of the whole broker, shared by every shard's listener.
///
/// Touched only when a connection is accepted or closed, never per request, so the
/// one lock here is off the data path.
#[derive(Debug)]
pub struct ConnectionLimits {
    /// Most connections open at once over all shards; `None`: no limit.
    max: Option<usize>,
    /// Most connections open at once from one client IP address; `None`: no limit.
    max_per_ip: Option<usize>,
    open: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Why a new connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `--max-connections-per-ip` connections from this address are open already
    /// (Kafka closes such a connection at once, as this broker does).
    PerIp { limit: usize },
    /// `--max-connections` connections are open already: the connection waits,
    /// unread, until one closes.
    Full,
}

/// One admitted connection; dropping it gives its place back.
#[derive(Debug)]
pub struct Admitted {
    limits: Arc<ConnectionLimits>,
    ip: Option<IpAddr>,
}

impl ConnectionLimits {
    /// Limits as given by the flags (`None`: unlimited).
    pub fn new(max: Option<usize>, max_per_ip: Option<usize>) -> Arc<Self> {
        Arc::new(ConnectionLimits { max, max_per_ip, open: Mutex::new(Counts::default()) })
    }

    /// Whether `--max-connections` connections are open: the listener stops accepting
    /// until one closes (new clients wait in the kernel's backlog, as with Kafka).
    pub fn full(&self) -> bool {
        self.max.is_some_and(|max| self.lock().total >= max)
    }

    /// Counts a connection from `ip` (unknown peer: counted in the total only), or
    /// says why it must wait or be closed.
    pub fn admit(self: &Arc<Self>, ip: Option<IpAddr>) -> Result<Admitted, Refused> {
        let mut open = self.lock();
        if self.max.is_some_and(|max| open.total >= max) {
            return Err(Refused::Full);
        }
        if let (Some(limit), Some(ip)) = (self.max_per_ip, ip) {
            let n = open.per_ip.entry(ip).or_insert(0);
            if *n >= limit {
                if *n == 0 {
                    open.per_ip.remove(&ip);
                }
                return Err(Refused::PerIp { limit });
            }
            *n += 1;
        }
        open.total += 1;
        Ok(Admitted { limits: self.clone(), ip: ip.filter(|_| self.max_per_ip.is_some()) })
    }

    /// Connections open now, over all shards.
    pub fn open(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // A panic while holding this lock aborts the process (see main), so a poisoned
        // lock never has to be recovered from; take the data either way.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.limits.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(ip) = self.ip {
            if let Some(n) = open.per_ip.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    open.per_ip.remove(&ip);
                }
            }
        }
    }
}

/// A count of bytes handed out strictly first come, first served: a request waits
/// behind every request that asked before it, so a large one is never overtaken for
/// ever by smaller ones (glommio's semaphore wakes whoever fits). Lives on one core.
pub struct ByteBudget {
    total: u64,
    state: RefCell<BudgetState>,
}

struct BudgetState {
    available: u64,
    /// Waiting reservations in arrival order: (bytes, where to send the grant).
    waiting: VecDeque<(u64, oneshot::Sender<Grant>)>,
}

/// Bytes of a [`ByteBudget`] held; dropping it gives them back.
pub struct Grant {
    budget: Rc<ByteBudget>,
    bytes: u64,
}

impl ByteBudget {
    pub fn new(total: u64) -> Rc<Self> {
        Rc::new(ByteBudget {
            total,
            state: RefCell::new(BudgetState { available: total, waiting: VecDeque::new() }),
        })
    }

    /// Waits for `bytes` (at most the whole budget: a larger request takes all of it
    /// and so runs alone), after every reservation that asked before.
    pub async fn reserve(self: &Rc<Self>, bytes: u64) -> Grant {
        let bytes = bytes.clamp(1, self.total.max(1));
        let rx = {
            let mut st = self.state.borrow_mut();
            if st.waiting.is_empty() && st.available >= bytes {
                st.available -= bytes;
                return Grant { budget: self.clone(), bytes };
            }
            let (tx, rx) = oneshot::channel();
            st.waiting.push_back((bytes, tx));
            rx
        };
        // The sender is only dropped with the budget, which `self` keeps alive.
        rx.await.unwrap_or(Grant { budget: self.clone(), bytes: 0 })
    }

    /// Bytes not reserved now.
    pub fn available(&self) -> u64 {
        self.state.borrow().available
    }

    fn give_back(self: &Rc<Self>, bytes: u64) {
        let mut granted = Vec::new();
        {
            let mut st = self.state.borrow_mut();
            st.available += bytes;
            while let Some((want, tx)) = st.waiting.pop_front() {
                if tx.is_canceled() {
                    continue;
                }
                if want > st.available {
                    st.waiting.push_front((want, tx));
                    break;
                }
                st.available -= want;
                granted.push((tx, want));
            }
        }
        // Sent outside the borrow: a grant whose waiter is gone comes straight back
        // through its own drop.
        for (tx, want) in granted {
            let _ = tx.send(Grant { budget: self.clone(), bytes: want });
        }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if self.bytes > 0 {
            let bytes = std::mem::take(&mut self.bytes);
            self.budget.give_back(bytes);
        }
    }
}

/// The bytes of requests read and not yet answered, on one shard (lives on that
/// shard's core, shared by its connections), and per connection.
#[derive(Clone)]
pub struct RequestBudget {
    /// This shard's share of `--queued-max-request-bytes`; `None`: unlimited.
    shard: Option<Rc<ByteBudget>>,
    /// `--queued-max-request-bytes-per-connection`; 0: unlimited.
    per_connection: u64,
}

/// Request bytes reserved for one request; dropping it gives them back.
pub struct Reservation {
    _shard: Option<Grant>,
    _connection: Option<Grant>,
}

/// One connection's own budget (lives on the connection's core).
pub struct ConnectionBudget {
    shared: RequestBudget,
    own: Option<Rc<ByteBudget>>,
}

/// The connection's part of a request's reservation, taken before its body is read.
pub struct ConnectionGrant(Option<Grant>);

impl RequestBudget {
    /// `shard_bytes`: this shard's share of `--queued-max-request-bytes` (0: unlimited);
    /// `per_connection_bytes`: `--queued-max-request-bytes-per-connection` (0: unlimited).
    pub fn new(shard_bytes: u64, per_connection_bytes: u64) -> Self {
        RequestBudget {
            shard: (shard_bytes > 0).then(|| ByteBudget::new(shard_bytes)),
            per_connection: per_connection_bytes,
        }
    }

    /// The budget of a new connection.
    pub fn connection(&self) -> ConnectionBudget {
        ConnectionBudget {
            shared: self.clone(),
            own: (self.per_connection > 0).then(|| ByteBudget::new(self.per_connection)),
        }
    }

    /// Bytes of this shard's budget not reserved now (`None`: unlimited).
    pub fn available(&self) -> Option<u64> {
        self.shard.as_ref().map(|s| s.available())
    }
}

impl ConnectionBudget {
    /// First step, when a request's size prefix has arrived: waits until the
    /// connection's own unanswered requests leave room for `bytes` (the body is not
    /// read meanwhile). Only the connection's budget: a client that announces a large
    /// frame and sends nothing holds no part of the shard's.
    pub async fn reserve_own(&self, bytes: usize) -> ConnectionGrant {
        match &self.own {
            Some(own) => ConnectionGrant(Some(own.reserve(bytes as u64).await)),
            None => ConnectionGrant(None),
        }
    }

    /// Second step, once the whole frame has been read: waits for `bytes` of the
    /// shard's budget, behind every request of the shard's connections that asked
    /// before. While it waits, this connection reads nothing more.
    pub async fn reserve_shared(&self, own: ConnectionGrant, bytes: usize) -> Reservation {
        let shard = match &self.shared.shard {
            Some(shard) => Some(shard.reserve(bytes as u64).await),
            None => None,
        };
        Reservation { _shard: shard, _connection: own.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([10, 0, 0, last]))
    }

    fn ready<T>(f: impl std::future::Future<Output = T>) -> Option<T> {
        futures_lite::future::block_on(futures_lite::future::poll_once(f))
    }

    #[test]
    fn the_byte_budget_serves_in_arrival_order() {
        futures_lite::future::block_on(async {
            let budget = ByteBudget::new(100);
            let a = budget.reserve(60).await;
            // 50 does not fit; 10 would, but asked later: it waits behind the 50.
            let mut big = Box::pin(budget.reserve(50));
            assert!(ready(big.as_mut()).is_none());
            let mut small = Box::pin(budget.reserve(10));
            assert!(ready(small.as_mut()).is_none());
            assert_eq!(budget.available(), 40);
            drop(a);
            let big = ready(big.as_mut()).expect("the 50 runs first");
            let small = ready(small.as_mut()).expect("then the 10");
            assert_eq!(budget.available(), 40);
            drop((big, small));
            assert_eq!(budget.available(), 100);
            // Larger than the whole budget: takes all of it.
            let all = budget.reserve(1000).await;
            assert_eq!(budget.available(), 0);
            drop(all);
            assert_eq!(budget.available(), 100);
        });
    }

    #[test]
    fn a_waiter_that_gives_up_does_not_hold_the_queue() {
        futures_lite::future::block_on(async {
            let budget = ByteBudget::new(10);
            let a = budget.reserve(10).await;
            let mut gone = Box::pin(budget.reserve(5));
            assert!(ready(gone.as_mut()).is_none());
            let mut next = Box::pin(budget.reserve(10));
            assert!(ready(next.as_mut()).is_none());
            drop(gone);
            drop(a);
            assert!(ready(next.as_mut()).is_some());
        });
    }

    #[test]
    fn per_ip_counts_each_address_and_gives_places_back() {
        let limits = ConnectionLimits::new(None, Some(2));
        let a1 = limits.admit(ip(1)).unwrap();
        let _a2 = limits.admit(ip(1)).unwrap();
        assert_eq!(limits.admit(ip(1)).unwrap_err(), Refused::PerIp { limit: 2 });
        let _b1 = limits.admit(ip(2)).unwrap();
        let _unknown = limits.admit(None).unwrap();
        assert_eq!(limits.open(), 4);
        drop(a1);
        assert_eq!(limits.open(), 3);
        let _a3 = limits.admit(ip(1)).unwrap();
        assert_eq!(limits.admit(ip(1)).unwrap_err(), Refused::PerIp { limit: 2 });
    }

    #[test]
    fn the_total_limit_makes_new_connections_wait_until_one_closes() {
        let limits = ConnectionLimits::new(Some(2), None);
        let a = limits.admit(ip(1)).unwrap();
        assert!(!limits.full());
        let _b = limits.admit(ip(2)).unwrap();
        assert!(limits.full());
        assert_eq!(limits.admit(ip(3)).unwrap_err(), Refused::Full);
        drop(a);
        assert!(!limits.full());
        let _c = limits.admit(ip(3)).unwrap();
        assert_eq!(limits.open(), 2);
    }

    #[test]
    fn a_full_broker_does_not_count_a_refused_address() {
        let limits = ConnectionLimits::new(Some(1), Some(1));
        let _a = limits.admit(ip(1)).unwrap();
        assert_eq!(limits.admit(ip(2)).unwrap_err(), Refused::Full);
        drop(_a);
        // 10.0.0.2 was not counted while it waited.
        assert!(limits.admit(ip(2)).is_ok());
    }
}
