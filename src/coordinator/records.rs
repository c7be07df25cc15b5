//! Durable coordinator state: committed offsets and group metadata as key/value records
//! of the internal log (the role of Kafka's `__consumer_offsets` records,
//! `GroupMetadataManager.offsetCommitKey/Value`, `groupMetadataKey/Value`), and
//! replaying them at start-up.
//!
//! Format (big-endian, compact, versioned; not Kafka's):
//! - key: `kind: u8` (1 = offset, 2 = group), `group: str`, and for offsets
//!   `topic: str, partition: i32`. Keys are canonical, so log compaction can keep the
//!   last record per key. A tombstone is the key with no value.
//! - value: `version: u8` (1) then the fields of the variant in declaration order.
//! - `str` / `bytes` = `u32` length + bytes (UTF-8 for `str`); optional values are a
//!   `u8` flag (0 absent, 1 present) then the value; arrays a `u32` count.
//!
//! Decoding checks every length against the remaining input before allocating and never
//! panics; trailing bytes after a known value version are ignored (room for fields
//! added later), trailing bytes after a key are an error.

use bytes::Bytes;

use super::group::{CommittedOffset, Group};
use super::member::Member;
use super::state::GroupState;
use super::GroupCoordinator;

const KEY_OFFSET: u8 = 1;
const KEY_GROUP: u8 = 2;
const VALUE_VERSION: u8 = 1;

/// One member as stored in a [`GroupRecord::GroupMetadata`] (Kafka's
/// `MemberMetadataValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRecord {
    /// Coordinator-assigned member id.
    pub member_id: String,
    /// group.instance.id of a static member.
    pub group_instance_id: Option<String>,
    /// Client id from the JoinGroup request header.
    pub client_id: String,
    /// Client address as the caller reported it (Kafka uses "/ip").
    pub client_host: String,
    /// Rebalance timeout (ms).
    pub rebalance_timeout_ms: i32,
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's selected protocol.
    pub subscription: Bytes,
    /// The member's assignment in the stored generation.
    pub assignment: Bytes,
}

/// A record of the coordinator's internal log. Later records for the same key override
/// earlier ones; tombstones delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupRecord {
    /// A committed offset (Kafka's `OffsetCommitKey` + `OffsetCommitValue`).
    Offset {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// The committed offset (next record to consume).
        offset: i64,
        /// Leader epoch of the committed offset; -1 = none.
        leader_epoch: i32,
        /// Client-supplied commit metadata ("" when none).
        metadata: String,
        /// When the commit was accepted (ms since the epoch).
        commit_timestamp_ms: i64,
        /// Explicit expiry (ms since the epoch) from OffsetCommit v2-4 retention.
        expire_timestamp_ms: Option<i64>,
    },
    /// Deletes one committed offset.
    OffsetTombstone {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
    },
    /// A group's membership and assignment at the end of a rebalance (Kafka's
    /// `GroupMetadataKey` + `GroupMetadataValue`).
    GroupMetadata {
        /// Group id.
        group: String,
        /// Protocol type ("consumer", "connect", ...); "" when the group never had members.
        protocol_type: String,
        /// Generation id.
        generation: i32,
        /// Selected protocol (assignor); `None` for an Empty group.
        protocol: Option<String>,
        /// Member id of the leader.
        leader: Option<String>,
        /// When the group entered its current state (ms since the epoch).
        current_state_timestamp_ms: Option<i64>,
        /// Members with their subscription and assignment.
        members: Vec<MemberRecord>,
    },
    /// Deletes a group's metadata.
    GroupTombstone {
        /// Group id.
        group: String,
    },
}

/// A record that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid group record: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

// ---- encoding ----

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_bytes(b, s.as_bytes());
}

fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u32).to_be_bytes());
    b.extend_from_slice(s);
}

fn put_opt_str(b: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            b.push(1);
            put_str(b, s);
        }
        None => b.push(0),
    }
}

fn put_opt_i64(b: &mut Vec<u8>, v: Option<i64>) {
    match v {
        Some(v) => {
            b.push(1);
            b.extend_from_slice(&v.to_be_bytes());
        }
        None => b.push(0),
    }
}

// ---- decoding ----

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.buf.len() {
            return Err(DecodeError("truncated"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn i32(&mut self) -> Result<i32, DecodeError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(self.i32()? as u32)
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, DecodeError> {
        let b = self.bytes()?;
        std::str::from_utf8(b)
            .map(|s| s.to_string())
            .map_err(|_| DecodeError("string is not UTF-8"))
    }

    fn flag(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError("bad presence flag")),
        }
    }

    fn opt_string(&mut self) -> Result<Option<String>, DecodeError> {
        if self.flag()? {
            self.string().map(Some)
        } else {
            Ok(None)
        }
    }

    fn opt_i64(&mut self) -> Result<Option<i64>, DecodeError> {
        if self.flag()? {
            self.i64().map(Some)
        } else {
            Ok(None)
        }
    }
}

impl GroupRecord {
    /// The group this record belongs to.
    pub fn group(&self) -> &str {
        match self {
            GroupRecord::Offset { group, .. }
            | GroupRecord::OffsetTombstone { group, .. }
            | GroupRecord::GroupMetadata { group, .. }
            | GroupRecord::GroupTombstone { group } => group,
        }
    }

    /// Encode as (key, value) for the internal log; tombstones have an empty value and
    /// must be appended as null-value records (decode them with `value = None`).
    pub fn encode(&self) -> (Vec<u8>, Vec<u8>) {
        let mut key = Vec::new();
        let mut value = Vec::new();
        match self {
            GroupRecord::Offset {
                group,
                topic,
                partition,
                offset,
                leader_epoch,
                metadata,
                commit_timestamp_ms,
                expire_timestamp_ms,
            } => {
                offset_key(&mut key, group, topic, *partition);
                value.push(VALUE_VERSION);
                value.extend_from_slice(&offset.to_be_bytes());
                value.extend_from_slice(&leader_epoch.to_be_bytes());
                put_str(&mut value, metadata);
                value.extend_from_slice(&commit_timestamp_ms.to_be_bytes());
                put_opt_i64(&mut value, *expire_timestamp_ms);
            }
            GroupRecord::OffsetTombstone {
                group,
                topic,
                partition,
            } => offset_key(&mut key, group, topic, *partition),
            GroupRecord::GroupMetadata {
                group,
                protocol_type,
                generation,
                protocol,
                leader,
                current_state_timestamp_ms,
                members,
            } => {
                key.push(KEY_GROUP);
                put_str(&mut key, group);
                value.push(VALUE_VERSION);
                put_str(&mut value, protocol_type);
                value.extend_from_slice(&generation.to_be_bytes());
                put_opt_str(&mut value, protocol.as_deref());
                put_opt_str(&mut value, leader.as_deref());
                put_opt_i64(&mut value, *current_state_timestamp_ms);
                value.extend_from_slice(&(members.len() as u32).to_be_bytes());
                for m in members {
                    put_str(&mut value, &m.member_id);
                    put_opt_str(&mut value, m.group_instance_id.as_deref());
                    put_str(&mut value, &m.client_id);
                    put_str(&mut value, &m.client_host);
                    value.extend_from_slice(&m.rebalance_timeout_ms.to_be_bytes());
                    value.extend_from_slice(&m.session_timeout_ms.to_be_bytes());
                    put_bytes(&mut value, &m.subscription);
                    put_bytes(&mut value, &m.assignment);
                }
            }
            GroupRecord::GroupTombstone { group } => {
                key.push(KEY_GROUP);
                put_str(&mut key, group);
            }
        }
        (key, value)
    }

    /// Whether this record is a tombstone (appended with a null value).
    pub fn is_tombstone(&self) -> bool {
        matches!(
            self,
            GroupRecord::OffsetTombstone { .. } | GroupRecord::GroupTombstone { .. }
        )
    }

    /// Decode a record read from the internal log; `value = None` is a tombstone.
    /// Never panics, whatever the input.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<Self, DecodeError> {
        let mut k = Reader { buf: key };
        let kind = k.u8()?;
        let group = k.string()?;
        let (topic, partition) = match kind {
            KEY_OFFSET => (k.string()?, k.i32()?),
            KEY_GROUP => (String::new(), 0),
            _ => return Err(DecodeError("unknown key kind")),
        };
        if !k.buf.is_empty() {
            return Err(DecodeError("trailing bytes after key"));
        }
        let Some(value) = value else {
            return Ok(match kind {
                KEY_OFFSET => GroupRecord::OffsetTombstone {
                    group,
                    topic,
                    partition,
                },
                _ => GroupRecord::GroupTombstone { group },
            });
        };
        let mut v = Reader { buf: value };
        if v.u8()? != VALUE_VERSION {
            return Err(DecodeError("unknown value version"));
        }
        if kind == KEY_OFFSET {
            return Ok(GroupRecord::Offset {
                group,
                topic,
                partition,
                offset: v.i64()?,
                leader_epoch: v.i32()?,
                metadata: v.string()?,
                commit_timestamp_ms: v.i64()?,
                expire_timestamp_ms: v.opt_i64()?,
            });
        }
        let protocol_type = v.string()?;
        let generation = v.i32()?;
        let protocol = v.opt_string()?;
        let leader = v.opt_string()?;
        let current_state_timestamp_ms = v.opt_i64()?;
        let count = v.u32()? as usize;
        // Each member takes well over one byte: bound the allocation by the input.
        if count > v.buf.len() {
            return Err(DecodeError("member count exceeds record size"));
        }
        let mut members = Vec::with_capacity(count);
        for _ in 0..count {
            members.push(MemberRecord {
                member_id: v.string()?,
                group_instance_id: v.opt_string()?,
                client_id: v.string()?,
                client_host: v.string()?,
                rebalance_timeout_ms: v.i32()?,
                session_timeout_ms: v.i32()?,
                subscription: Bytes::copy_from_slice(v.bytes()?),
                assignment: Bytes::copy_from_slice(v.bytes()?),
            });
        }
        Ok(GroupRecord::GroupMetadata {
            group,
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp_ms,
            members,
        })
    }
}

fn offset_key(key: &mut Vec<u8>, group: &str, topic: &str, partition: i32) {
    key.push(KEY_OFFSET);
    put_str(key, group);
    put_str(key, topic);
    key.extend_from_slice(&partition.to_be_bytes());
}

impl GroupCoordinator {
    /// Replay one record of the internal log (start-up, in log order). Kafka source:
    /// `GroupMetadataManager.loadGroupsAndOffsets` / `GroupMetadata.loadGroup`.
    ///
    /// A group with stored members comes back Stable in its stored generation (members
    /// keep their ids and assignments and must heartbeat within their session timeout,
    /// armed by `set_loading(false, now)`); without members it is Empty. A group
    /// tombstone clears the metadata (offsets have their own tombstones).
    pub fn load(&mut self, record: GroupRecord) {
        match record {
            GroupRecord::Offset {
                group,
                topic,
                partition,
                offset,
                leader_epoch,
                metadata,
                commit_timestamp_ms,
                expire_timestamp_ms,
            } => {
                let g = self
                    .groups
                    .entry(group.clone())
                    .or_insert_with(|| Group::new(&group, None));
                g.offsets.insert(
                    (topic, partition),
                    CommittedOffset {
                        offset,
                        leader_epoch,
                        metadata,
                        commit_timestamp_ms,
                        expire_timestamp_ms,
                    },
                );
            }
            GroupRecord::OffsetTombstone {
                group,
                topic,
                partition,
            } => {
                if let Some(g) = self.groups.get_mut(&group) {
                    g.offsets.remove(&(topic, partition));
                    if g.offsets.is_empty() && !has_metadata(g) {
                        self.remove_group(&group);
                    }
                }
            }
            GroupRecord::GroupMetadata {
                group,
                protocol_type,
                generation,
                protocol,
                leader,
                current_state_timestamp_ms,
                members,
            } => {
                let offsets = self
                    .remove_group(&group)
                    .map(|g| g.offsets)
                    .unwrap_or_default();
                let mut g = Group::new(&group, current_state_timestamp_ms);
                g.offsets = offsets;
                g.protocol_type = (!protocol_type.is_empty()).then_some(protocol_type.clone());
                g.generation = generation;
                g.protocol_name = protocol.clone();
                let protocol = protocol.unwrap_or_default();
                for m in members {
                    if let Some(i) = &m.group_instance_id {
                        g.static_members.insert(i.clone(), m.member_id.clone());
                    }
                    g.members.insert(
                        m.member_id.clone(),
                        Member {
                            member_id: m.member_id,
                            group_instance_id: m.group_instance_id,
                            client_id: m.client_id,
                            client_host: m.client_host,
                            rebalance_timeout_ms: m.rebalance_timeout_ms,
                            session_timeout_ms: m.session_timeout_ms,
                            protocol_type: protocol_type.clone(),
                            protocols: vec![(protocol.clone(), m.subscription)],
                            assignment: m.assignment,
                            awaiting_join: None,
                            awaiting_sync: None,
                            is_new: false,
                            heartbeat_deadline: None,
                        },
                    );
                }
                g.leader = leader
                    .filter(|l| g.members.contains_key(l))
                    .or_else(|| g.members.keys().next().cloned());
                g.state = if g.members.is_empty() {
                    GroupState::Empty
                } else {
                    GroupState::Stable
                };
                g.subscribed_topics = g.compute_subscribed_topics();
                self.groups.insert(group, g);
            }
            GroupRecord::GroupTombstone { group } => {
                if let Some(old) = self.remove_group(&group) {
                    if !old.offsets.is_empty() {
                        let mut g = Group::new(&group, None);
                        g.offsets = old.offsets;
                        self.groups.insert(group, g);
                    }
                }
            }
        }
    }
}

/// Whether a loaded group carries metadata of its own (not just offsets).
fn has_metadata(g: &Group) -> bool {
    g.generation > 0 || g.protocol_type.is_some() || !g.members.is_empty()
}
