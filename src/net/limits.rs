//! What the network layer holds back so that memory stays bounded however many
//! clients push however fast: connection counts (`--max-connections`,
//! `--max-connections-per-ip`, Kafka's `max.connections` / `max.connections.per.ip`)
//! and the bytes of requests read but not yet answered (`--queued-max-request-bytes`,
//! Kafka's `queued.max.request.bytes`, and a per-connection share of it).
//!
//! A request's bytes are reserved when its 4-byte size prefix has been read and before
//! its body is read, and given back once its response has been written (or, for
//! `acks=0` produce, once it has been handled). While a reservation waits the
//! connection reads nothing more: the client's writes back up into its socket buffer
//! and then into the client, as with Kafka's muted channels.

use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use glommio::sync::{Semaphore, StaticPermit};

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

/// The bytes of requests read and not yet answered, on one shard (lives on that
/// shard's core, shared by its connections), and per connection.
#[derive(Clone)]
pub struct RequestBudget {
    /// This shard's share of `--queued-max-request-bytes` and that share in bytes;
    /// `None`: unlimited.
    shard: Option<(Rc<Semaphore>, u64)>,
    /// `--queued-max-request-bytes-per-connection`; 0: unlimited.
    per_connection: u64,
}

/// Request bytes reserved for one request; dropping it gives them back.
pub struct Reservation {
    _shard: Option<StaticPermit>,
    _connection: Option<StaticPermit>,
}

/// One connection's own budget (lives on the connection's core).
pub struct ConnectionBudget {
    shared: RequestBudget,
    own: Option<Rc<Semaphore>>,
}

impl RequestBudget {
    /// `shard_bytes`: this shard's share of `--queued-max-request-bytes` (0: unlimited);
    /// `per_connection_bytes`: `--queued-max-request-bytes-per-connection` (0: unlimited).
    pub fn new(shard_bytes: u64, per_connection_bytes: u64) -> Self {
        RequestBudget {
            shard: (shard_bytes > 0).then(|| (Rc::new(Semaphore::new(shard_bytes)), shard_bytes)),
            per_connection: per_connection_bytes,
        }
    }

    /// The budget of a new connection.
    pub fn connection(&self) -> ConnectionBudget {
        ConnectionBudget {
            shared: self.clone(),
            own: (self.per_connection > 0).then(|| Rc::new(Semaphore::new(self.per_connection))),
        }
    }

    /// Bytes of this shard's budget not reserved now (`None`: unlimited).
    pub fn available(&self) -> Option<u64> {
        self.shard.as_ref().map(|(s, _)| s.available())
    }
}

impl ConnectionBudget {
    /// Reserves `bytes` for one request of `bytes` bytes, waiting while the
    /// connection's own budget, then the shard's, is spent. A request larger than a
    /// whole budget reserves all of it (it waits until it is the only one, then runs).
    /// First the connection's: a connection that waits for its own earlier requests
    /// holds nothing of the shard's meanwhile.
    pub async fn reserve(&self, bytes: usize) -> Reservation {
        let bytes = bytes.max(1) as u64;
        let connection = match &self.own {
            Some(own) => {
                own.acquire_static_permit(bytes.min(self.shared.per_connection)).await.ok()
            }
            None => None,
        };
        let shard = match &self.shared.shard {
            Some((shard, total)) => shard.acquire_static_permit(bytes.min(*total)).await.ok(),
            None => None,
        };
        Reservation { _shard: shard, _connection: connection }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([10, 0, 0, last]))
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
