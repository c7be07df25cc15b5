//! The one home of Kafka error codes.
//!
//! Every error a client can see is a [`ResponseError`] (kafka-protocol's enum of the
//! codes in the protocol guide's "Error Codes" table, generated from Kafka's
//! `Errors.java`). Internal error types ([`AppendError`], [`ReadError`], [`DeleteRecordsError`],
//! [`CatalogError`]) map to it here, and cross-core replies carry it, never a raw
//! `i16`. The number is produced only where a response field is filled, by
//! [`code`] or `ResponseError::code`.
//!
//! No other module declares an error-code constant or writes a bare error number.

pub use kafka_protocol::ResponseError;

use crate::log::start_offset::DeleteRecordsError;
use crate::log::{AppendError, ReadError};
use crate::metadata::CatalogError;

/// A result whose error is what the client is told.
pub type KafkaResult<T> = Result<T, ResponseError>;

/// The wire value of an outcome: 0 (NONE) for `None`, else the error's code.
pub fn code(error: Option<ResponseError>) -> i16 {
    error.map_or(0, |e| e.code())
}

impl From<&AppendError> for ResponseError {
    /// OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE,
    /// TRANSACTION_COORDINATOR_FENCED, INVALID_RECORD or KAFKA_STORAGE_ERROR.
    fn from(e: &AppendError) -> Self {
        match e {
            AppendError::OutOfOrderSequence => ResponseError::OutOfOrderSequenceNumber,
            AppendError::InvalidProducerEpoch => ResponseError::InvalidProducerEpoch,
            AppendError::InvalidTxnState => ResponseError::InvalidTxnState,
            AppendError::CoordinatorFenced => ResponseError::TransactionCoordinatorFenced,
            AppendError::InvalidMarker(_) => ResponseError::InvalidRecord,
            AppendError::Io(_) => ResponseError::KafkaStorageError,
        }
    }
}

impl From<&DeleteRecordsError> for ResponseError {
    /// OFFSET_OUT_OF_RANGE, or KAFKA_STORAGE_ERROR for I/O.
    fn from(e: &DeleteRecordsError) -> Self {
        match e {
            DeleteRecordsError::OffsetOutOfRange => ResponseError::OffsetOutOfRange,
            DeleteRecordsError::Io(_) => ResponseError::KafkaStorageError,
        }
    }
}

impl From<&ReadError> for ResponseError {
    /// OFFSET_OUT_OF_RANGE or KAFKA_STORAGE_ERROR.
    fn from(e: &ReadError) -> Self {
        match e {
            ReadError::OffsetOutOfRange => ResponseError::OffsetOutOfRange,
            ReadError::Io(_) => ResponseError::KafkaStorageError,
        }
    }
}

impl From<&CatalogError> for ResponseError {
    /// The catalog's refusal as the code CreateTopics, DeleteTopics and
    /// CreatePartitions answer with.
    fn from(e: &CatalogError) -> Self {
        match e {
            CatalogError::TopicAlreadyExists(_) => ResponseError::TopicAlreadyExists,
            CatalogError::InvalidTopic(_) => ResponseError::InvalidTopicException,
            CatalogError::InvalidPartitions(_) => ResponseError::InvalidPartitions,
            CatalogError::InvalidReplicaAssignment(_) => ResponseError::InvalidReplicaAssignment,
            CatalogError::UnknownTopic(_) => ResponseError::UnknownTopicOrPartition,
            CatalogError::UnknownTopicId(_) => ResponseError::UnknownTopicId,
            CatalogError::InvalidRequest(_) => ResponseError::InvalidRequest,
            CatalogError::InvalidConfig(_) => ResponseError::InvalidConfig,
            CatalogError::Storage(_) => ResponseError::KafkaStorageError,
            CatalogError::TopicAuthorizationFailed(_) => ResponseError::TopicAuthorizationFailed,
            CatalogError::ClusterAuthorizationFailed(_) => {
                ResponseError::ClusterAuthorizationFailed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_protocol_guide_numbers() {
        assert_eq!(code(None), 0);
        assert_eq!(code(Some(ResponseError::UnknownServerError)), -1);
        assert_eq!(code(Some(ResponseError::KafkaStorageError)), 56);
        assert_eq!(ResponseError::from(&AppendError::OutOfOrderSequence).code(), 45);
        assert_eq!(ResponseError::from(&AppendError::InvalidProducerEpoch).code(), 47);
        assert_eq!(ResponseError::from(&ReadError::OffsetOutOfRange).code(), 1);
        let e = CatalogError::InvalidTopic("x".into());
        assert_eq!(ResponseError::from(&e).code(), 17);
        assert_eq!(ResponseError::from(&CatalogError::UnknownTopicId("x".into())).code(), 100);
    }
}
