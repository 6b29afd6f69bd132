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

/// The compiled `FileDescriptorSet` of `proto/a2a.proto` (A2A 1.0, with its
/// imports), as protobuf bytes: the schema generator reads it.
pub static DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor.bin"));

/// The compiled `FileDescriptorSet` of `proto/a2a-1.1.proto` (the A2A 1.1
/// draft, the 1.0 messages plus five fields), as protobuf bytes: the
/// messages of [`pb`] are generated from it, and the decoder of
/// [`protojson`] reads it.
pub static DESCRIPTOR_1_1: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor_1_1.bin"));

fn decode_pool(
    cell: &'static std::sync::OnceLock<Result<prost_reflect::DescriptorPool, String>>,
    bytes: &[u8],
) -> Result<&'static prost_reflect::DescriptorPool, crate::WireError> {
    cell.get_or_init(|| prost_reflect::DescriptorPool::decode(bytes).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| crate::WireError::Descriptor(e.clone()))
}

/// The descriptor pool of [`DESCRIPTOR`] (1.0), decoded once.
pub fn descriptor_pool() -> Result<&'static prost_reflect::DescriptorPool, crate::WireError> {
    static POOL: std::sync::OnceLock<Result<prost_reflect::DescriptorPool, String>> =
        std::sync::OnceLock::new();
    decode_pool(&POOL, DESCRIPTOR)
}

/// The descriptor pool of [`DESCRIPTOR_1_1`], decoded once.
pub fn descriptor_pool_1_1() -> Result<&'static prost_reflect::DescriptorPool, crate::WireError> {
    static POOL: std::sync::OnceLock<Result<prost_reflect::DescriptorPool, String>> =
        std::sync::OnceLock::new();
    decode_pool(&POOL, DESCRIPTOR_1_1)
}

#[cfg(test)]
mod tests {
    use super::pb::TaskState;

    fn kind(f: &prost_reflect::FieldDescriptor) -> String {
        match f.kind() {
            prost_reflect::Kind::Message(m) => m.full_name().to_string(),
            prost_reflect::Kind::Enum(e) => e.full_name().to_string(),
            k => format!("{k:?}"),
        }
    }

    /// The 1.1 draft is 1.0 plus exactly the five fields of dev-1.1's #1810:
    /// every 1.0 message and field is there with its number and type.
    #[test]
    fn the_1_1_proto_only_adds_the_generation_fields() {
        let v1_0 = super::descriptor_pool().expect("1.0");
        let v1_1 = super::descriptor_pool_1_1().expect("1.1");
        let mut added = Vec::new();
        for m in v1_1.all_messages() {
            let Some(old) = v1_0.get_message_by_name(m.full_name()) else {
                panic!("{} is not a 1.0 message", m.full_name());
            };
            for f in m.fields() {
                match old.get_field(f.number()) {
                    Some(o) => {
                        assert_eq!(o.name(), f.name(), "{}", m.full_name());
                        assert_eq!(kind(&o), kind(&f), "{}.{}", m.full_name(), f.name());
                    }
                    None => added.push(format!("{}.{}={}", m.name(), f.name(), f.number())),
                }
            }
        }
        assert_eq!(v1_0.all_messages().count(), v1_1.all_messages().count());
        added.sort();
        assert_eq!(
            added,
            [
                "GetTaskRequest.current_generation=4",
                "SendMessageConfiguration.if_generation_match=5",
                "Task.generation=7",
                "TaskArtifactUpdateEvent.generation=7",
                "TaskStatusUpdateEvent.generation=5",
            ]
        );
    }

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
