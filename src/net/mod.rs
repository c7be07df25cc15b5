//! The network layer of one shard: the SO_REUSEPORT listener ([`listener`]) and
//! each client [`connection`]. Frames are read into `Bytes`, dispatched to
//! [`crate::handlers`], and responses written strictly in request order.

pub mod close;
pub mod connection;
pub mod limits;
pub mod listener;
pub mod listeners;
pub mod port_sharers;
mod rcvlowat;
mod recv;
mod segments;
pub mod shard_nodes;
mod split;
pub mod tls;
