//! A2A 1.0 on the wire: the `lf.a2a.v1` messages of `proto/a2a.proto`, compiled
//! once here for every binding and every side (the JSON-RPC, HTTP+JSON and gRPC
//! adapters, the client, the schema generator).

pub mod errors;
pub mod grpc;
pub mod protojson;

/// The `lf.a2a.v1` messages (prost, with ProtoJSON serde from pbjson, and the
/// `A2AService` gRPC client in `a2a_service_client`).
#[allow(missing_docs, unreachable_pub, clippy::all, reason = "generated code")]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
}

impl pb::TaskState {
    /// Every state, in wire-number order.
    pub const ALL: [pb::TaskState; 9] = [
        pb::TaskState::Unspecified,
        pb::TaskState::Submitted,
        pb::TaskState::Working,
        pb::TaskState::Completed,
        pb::TaskState::Failed,
        pb::TaskState::Canceled,
        pb::TaskState::InputRequired,
        pb::TaskState::Rejected,
        pb::TaskState::AuthRequired,
    ];

    /// The wire number.
    pub fn number(self) -> i32 {
        self as i32
    }

    /// The state for a wire number (`None` for a number the proto does not name).
    pub fn from_number(n: i32) -> Option<Self> {
        Self::try_from(n).ok()
    }

    /// The ProtoJSON enum name (`TASK_STATE_COMPLETED`).
    pub fn name(self) -> &'static str {
        self.as_str_name()
    }

    /// True for COMPLETED, FAILED, CANCELED and REJECTED.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            pb::TaskState::Completed
                | pb::TaskState::Failed
                | pb::TaskState::Canceled
                | pb::TaskState::Rejected
        )
    }

    /// True for INPUT_REQUIRED and AUTH_REQUIRED.
    pub fn is_interrupted(self) -> bool {
        matches!(
            self,
            pb::TaskState::InputRequired | pb::TaskState::AuthRequired
        )
    }
}

/// The compiled `FileDescriptorSet` of `proto/a2a.proto` (with its imports), as
/// protobuf bytes: the decoder of [`protojson`] and the schema generator read it.
pub static DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor.bin"));

/// The descriptor pool of [`DESCRIPTOR`], decoded once.
pub fn descriptor_pool() -> Result<&'static prost_reflect::DescriptorPool, crate::WireError> {
    static POOL: std::sync::OnceLock<Result<prost_reflect::DescriptorPool, String>> =
        std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        prost_reflect::DescriptorPool::decode(DESCRIPTOR).map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| crate::WireError::Descriptor(e.clone()))
}

#[cfg(test)]
mod tests {
    use super::pb::TaskState;

    #[test]
    fn task_states_know_their_numbers_names_and_kinds() {
        for (n, s) in TaskState::ALL.into_iter().enumerate() {
            assert_eq!(s.number(), n as i32);
            assert_eq!(TaskState::from_number(s.number()), Some(s));
            assert!(s.name().starts_with("TASK_STATE_"));
            assert!(!(s.is_terminal() && s.is_interrupted()));
        }
        assert_eq!(TaskState::from_number(9), None);
        let terminal: Vec<_> = TaskState::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                TaskState::Completed,
                TaskState::Failed,
                TaskState::Canceled,
                TaskState::Rejected
            ]
        );
        assert!(
            TaskState::InputRequired.is_interrupted() && TaskState::AuthRequired.is_interrupted()
        );
    }
}
