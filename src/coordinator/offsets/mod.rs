//! Committed offsets: OffsetCommit (`commit.rs`), OffsetFetch (`fetch.rs`),
//! OffsetDelete (`delete.rs`), retention (`retention.rs`), undoing a commit whose
//! write failed (`revert.rs`), TxnOffsetCommit (`txn_commit.rs`) and the pending
//! transactional offsets that a transaction marker commits or drops (`pending.rs`).
//! Committed offsets live in the shared [`Group`](super::group::Group) of either kind,
//! pending ones in the coordinator by producer id. Kafka source:
//! `GroupCoordinator.handleCommitOffsets` / `handleFetchOffsets` / `handleDeleteOffsets`,
//! `GroupMetadataManager.cleanupGroupMetadata`, `OffsetMetadataManager`.

mod commit;
mod delete;
mod fetch;
mod pending;
mod retention;
mod revert;
mod txn_commit;

pub(crate) use pending::PendingOffsets;
