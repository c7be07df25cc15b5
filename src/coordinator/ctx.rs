//! Per-call context (config, clock, output sink) and version-aware builders for the
//! responses that can be parked (JoinGroup, SyncGroup).

use bytes::Bytes;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupResponse, ResponseKind, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::member::Parked;
use super::records::GroupRecord;
use super::{CoordinatorConfig, Output, RequestToken};
use crate::error::{code, ResponseError};
use crate::protocol::strings::sb;

/// What one coordinator call needs besides the group itself.
pub(crate) struct Ctx<'a> {
    /// The coordinator's configuration.
    pub cfg: &'a CoordinatorConfig,
    /// The id of the group the call works on (for the records it persists).
    pub group_id: &'a str,
    /// Current time, ms since the Unix epoch.
    pub now: i64,
    /// Where the call's outputs go, in order.
    pub out: &'a mut Vec<Output>,
}

impl Ctx<'_> {
    /// Answer the request `token`.
    pub fn respond(&mut self, token: RequestToken, response: ResponseKind) {
        self.out.push(Output::Respond { token, response });
    }

    /// Persist `record`; responses pushed after it wait for it.
    pub fn persist(&mut self, record: GroupRecord) {
        self.out.push(Output::Persist(record));
    }

    /// Answer a parked JoinGroup, shaped for its version.
    pub fn respond_join(&mut self, parked: Parked, result: JoinResult) {
        let r = result.into_response(parked.version);
        self.respond(parked.token, ResponseKind::JoinGroup(r));
    }

    /// Answer a parked SyncGroup, shaped for its version.
    pub fn respond_sync(&mut self, parked: Parked, result: SyncResult) {
        let r = result.into_response(parked.version);
        self.respond(parked.token, ResponseKind::SyncGroup(r));
    }
}

/// Kafka's `JoinGroupResult`.
#[derive(Debug, Clone)]
pub(crate) struct JoinResult {
    /// `None` = NONE.
    pub error: Option<ResponseError>,
    /// Generation of the group (-1 with an error).
    pub generation_id: i32,
    /// Protocol type of the group.
    pub protocol_type: Option<String>,
    /// Selected protocol of the generation.
    pub protocol_name: Option<String>,
    /// Member id of the leader ("" with an error).
    pub leader: String,
    /// The joining member's id (generated for new members).
    pub member_id: String,
    /// v9+: a rejoining static leader need not compute an assignment.
    pub skip_assignment: bool,
    /// All members' metadata (the leader only).
    pub members: Vec<JoinGroupResponseMember>,
}

impl JoinResult {
    /// `JoinGroupResult(memberId, error)`: generation -1, no protocol, no leader.
    pub fn error(member_id: &str, error: ResponseError) -> Self {
        JoinResult {
            error: Some(error),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            member_id: member_id.to_string(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }

    /// Shape for `version` like Kafka's `JoinGroupResponse` constructor: protocol name is
    /// "" instead of null before v7 and null instead of "" from v7.
    pub fn into_response(self, version: i16) -> JoinGroupResponse {
        let mut r = JoinGroupResponse::default();
        r.error_code = code(self.error);
        r.generation_id = self.generation_id;
        r.protocol_type = self.protocol_type.as_deref().map(sb);
        r.protocol_name = match self.protocol_name {
            Some(p) if version >= 7 && p.is_empty() => None,
            Some(p) => Some(sb(&p)),
            None if version < 7 => Some(StrBytes::new()),
            None => None,
        };
        r.leader = sb(&self.leader);
        r.skip_assignment = self.skip_assignment && version >= 9;
        r.member_id = sb(&self.member_id);
        r.members = self.members;
        r
    }
}

/// Kafka's `SyncGroupResult`.
#[derive(Debug, Clone)]
pub(crate) struct SyncResult {
    /// `None` = NONE.
    pub error: Option<ResponseError>,
    /// Protocol type of the group (`None` with an error).
    pub protocol_type: Option<String>,
    /// Selected protocol (`None` with an error).
    pub protocol_name: Option<String>,
    /// The member's assignment (empty with an error).
    pub assignment: Bytes,
}

impl SyncResult {
    /// A refusal: no protocol, no assignment.
    pub fn error(error: ResponseError) -> Self {
        SyncResult {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }

    /// The SyncGroup response (same shape in every version).
    pub fn into_response(self, _version: i16) -> SyncGroupResponse {
        let mut r = SyncGroupResponse::default();
        r.error_code = code(self.error);
        r.protocol_type = self.protocol_type.as_deref().map(sb);
        r.protocol_name = self.protocol_name.as_deref().map(sb);
        r.assignment = self.assignment;
        r
    }
}
