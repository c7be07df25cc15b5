//! Committed offsets: OffsetCommit (`commit.rs`), OffsetFetch (`fetch.rs`),
//! OffsetDelete (`delete.rs`), retention (`retention.rs`) and undoing a commit whose
//! write failed (`revert.rs`). Offsets live in the shared
//! [`Group`](super::group::Group) of either kind. Kafka source:
//! `GroupCoordinator.handleCommitOffsets` / `handleFetchOffsets` / `handleDeleteOffsets`,
//! `GroupMetadataManager.cleanupGroupMetadata`.

mod commit;
mod delete;
mod fetch;
mod retention;
mod revert;
