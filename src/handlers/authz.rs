//! The one authorization helper handlers call (Kafka's `AuthHelper`): each check is a
//! shard-local decision over this shard's copy of the catalog's ACLs
//! ([`crate::security::acl::Authorizer`]), for the connection's principal and client
//! address. With `--authorizer` off every check allows, and authorized operations are
//! every operation the resource type supports, as Kafka without an authorizer.

use super::Ctx;
use crate::error::ResponseError;
use crate::security::acl::authorizer::{all_operations, Requester};
use crate::security::acl::{AclOperation, ResourceType, CLUSTER_NAME};

impl Ctx {
    fn requester(&self) -> Requester<'_> {
        Requester { principal: &self.principal, host: &self.client_host }
    }

    /// Whether the connection may do `op` on the resource `resource_type`/`name`.
    pub fn authorize(&self, op: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        match &self.shard.authorizer {
            None => true,
            Some(authorizer) => {
                let catalog = self.shard.catalog();
                let allowed =
                    authorizer.authorize(&catalog.acls, self.requester(), op, resource_type, name);
                if !allowed {
                    tracing::debug!(
                        principal = %self.principal, host = %self.client_host,
                        operation = ?op, resource_type = ?resource_type, name,
                        "denied"
                    );
                }
                allowed
            }
        }
    }

    /// Kafka's checks of AddOffsetsToTxn and TxnOffsetCommit, in its order: WRITE on
    /// the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on
    /// the group (else GROUP_AUTHORIZATION_FAILED). `None`: both allowed.
    pub fn authorize_txn_offsets(
        &self,
        transactional_id: &str,
        group_id: &str,
    ) -> Option<ResponseError> {
        if !self.authorize(AclOperation::Write, ResourceType::TransactionalId, transactional_id) {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        } else if !self.authorize(AclOperation::Read, ResourceType::Group, group_id) {
            Some(ResponseError::GroupAuthorizationFailed)
        } else {
            None
        }
    }

    /// Whether the connection may do `op` on the cluster (`kafka-cluster`).
    pub fn authorize_cluster(&self, op: AclOperation) -> bool {
        self.authorize(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Whether the connection may do `op` on some resource of `resource_type`
    /// (Kafka's `authorizeByResourceType`, KIP-679).
    pub fn authorize_by_resource_type(
        &self,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        match &self.shard.authorizer {
            None => true,
            Some(authorizer) => authorizer.authorize_by_resource_type(
                &self.shard.catalog().acls,
                self.requester(),
                op,
                resource_type,
            ),
        }
    }

    /// The KIP-430 bit set of the operations the connection may do on a resource.
    pub fn authorized_operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        match &self.shard.authorizer {
            None => all_operations(resource_type),
            Some(authorizer) => authorizer.authorized_operations(
                &self.shard.catalog().acls,
                self.requester(),
                resource_type,
                name,
            ),
        }
    }
}
