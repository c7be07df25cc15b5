//! The eight transaction states, their ids in the `__transaction_state` log and the
//! transition rules (Kafka's `TransactionState` objects in `TransactionMetadata.scala`).

/// State of one transactional id. Kafka source: `kafka.coordinator.transaction.TransactionState`.
///
/// The life of a transaction: Empty -> Ongoing (first AddPartitionsToTxn /
/// AddOffsetsToTxn) -> PrepareCommit | PrepareAbort (EndTxn, or the coordinator's own
/// abort) -> CompleteCommit | CompleteAbort (once every marker is written) -> Ongoing
/// (next transaction) or Empty (InitProducerId). Dead is an id being expired;
/// PrepareEpochFence is the transient state of a coordinator-initiated abort (it is never
/// written to the log by Kafka nor by shardlog).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    /// No transaction in progress (id 0).
    Empty,
    /// Partitions were added; the transaction is open (id 1).
    Ongoing,
    /// Commit decided and logged; markers being written (id 2).
    PrepareCommit,
    /// Abort decided and logged; markers being written (id 3).
    PrepareAbort,
    /// Every commit marker written (id 4).
    CompleteCommit,
    /// Every abort marker written (id 5).
    CompleteAbort,
    /// The transactional id is being expired (id 6).
    Dead,
    /// The coordinator is bumping the epoch to fence a producer before it aborts (id 7).
    PrepareEpochFence,
}

/// Every state, in id order.
pub const ALL_STATES: [TxnState; 8] = [
    TxnState::Empty,
    TxnState::Ongoing,
    TxnState::PrepareCommit,
    TxnState::PrepareAbort,
    TxnState::CompleteCommit,
    TxnState::CompleteAbort,
    TxnState::Dead,
    TxnState::PrepareEpochFence,
];

impl TxnState {
    /// The state's id as stored in `TransactionLogValue.TransactionStatus` (int8).
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// The state of a stored id; `None` for an id Kafka does not define.
    pub fn from_id(id: i8) -> Option<TxnState> {
        ALL_STATES.iter().copied().find(|s| s.id() == id)
    }

    /// The name DescribeTransactions and ListTransactions report (Kafka's
    /// `TransactionState.name`, e.g. "PrepareCommit").
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state named `name` (case-sensitive, as Kafka's `TransactionState.fromName`).
    pub fn from_name(name: &str) -> Option<TxnState> {
        ALL_STATES.iter().copied().find(|s| s.name() == name)
    }

    /// The states a transition into `self` may start from (Kafka's
    /// `validPreviousStates`).
    pub fn valid_previous_states(self) -> &'static [TxnState] {
        use TxnState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            PrepareAbort => &[Ongoing, PrepareEpochFence],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    /// Whether a transition from `from` into `self` is allowed.
    pub fn accepts_from(self, from: TxnState) -> bool {
        self.valid_previous_states().contains(&from)
    }

    /// Whether an idle transactional id in this state may be expired
    /// (`transactional.id.expiration.ms`): Empty, CompleteCommit, CompleteAbort.
    pub fn is_expiration_allowed(self) -> bool {
        matches!(self, TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort)
    }
}

/// The outcome EndTxn asks for, and the kind of marker written (Kafka's
/// `TransactionResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnResult {
    /// Commit: markers of type COMMIT.
    Commit,
    /// Abort: markers of type ABORT.
    Abort,
}

impl TxnResult {
    /// EndTxn's `committed` flag as a result.
    pub fn from_committed(committed: bool) -> Self {
        if committed {
            TxnResult::Commit
        } else {
            TxnResult::Abort
        }
    }

    /// Whether this is a commit (WriteTxnMarkers' `transaction_result` = true).
    pub fn is_commit(self) -> bool {
        self == TxnResult::Commit
    }
}

/// The transactions protocol version a client or the broker speaks: Kafka's
/// `TransactionVersion` feature (`transaction.version`, KIP-890).
///
/// TV0: the original protocol. TV1: flexible `__transaction_state` values (value
/// version 1). TV2: the producer epoch is bumped at the end of every transaction
/// (EndTxn v5+ returns the new producer id and epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum TransactionVersion {
    /// `transaction.version` 0.
    #[default]
    Tv0,
    /// `transaction.version` 1.
    Tv1,
    /// `transaction.version` 2.
    Tv2,
}

impl TransactionVersion {
    /// The feature level (0, 1 or 2).
    pub fn level(self) -> i16 {
        match self {
            TransactionVersion::Tv0 => 0,
            TransactionVersion::Tv1 => 1,
            TransactionVersion::Tv2 => 2,
        }
    }

    /// The version of a level read from the log; levels above 2 read as TV2 and negative
    /// ones as TV0 (a value written by a newer broker keeps its strongest known meaning).
    pub fn from_level(level: i16) -> Self {
        match level {
            i16::MIN..=0 => TransactionVersion::Tv0,
            1 => TransactionVersion::Tv1,
            _ => TransactionVersion::Tv2,
        }
    }

    /// The version a client speaks, from the EndTxn request version: v5+ is TV2, older
    /// is TV0 (Kafka's `KafkaApis.handleEndTxnRequest`).
    pub fn of_end_txn_request(api_version: i16) -> Self {
        if api_version > 4 {
            TransactionVersion::Tv2
        } else {
            TransactionVersion::Tv0
        }
    }

    /// Whether EndTxn bumps the producer epoch (TV2).
    pub fn supports_epoch_bump(self) -> bool {
        self >= TransactionVersion::Tv2
    }

    /// The `TransactionLogValue` version a broker at this level writes: 1 from TV1 on,
    /// else 0.
    pub fn log_value_version(self) -> i16 {
        if self >= TransactionVersion::Tv1 {
            1
        } else {
            0
        }
    }
}
