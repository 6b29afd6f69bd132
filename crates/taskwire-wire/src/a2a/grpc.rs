//! The `lf.a2a.v1.A2AService` gRPC stubs and the `google.rpc` status messages its
//! errors carry.
//!
//! The client is the proto's, as tonic generates it ([`A2aServiceClient`]). The
//! server is generated from the proto's service with one change: GetTask answers
//! an [`EncodedTask`], a `Task` encoded as protobuf already. Clients poll
//! GetTask; a server can keep the encoding of each task version it answered, so
//! a task polled again is neither converted nor encoded again. Everything else
//! about the call (framing, compression, size limits, trailers) is tonic's.

use std::collections::HashMap;

use bytes::{BufMut, Bytes};
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic::Status;
use tonic_prost::{ProstCodec, ProstDecoder};

use super::pb;

/// The generated server (see build.rs).
#[allow(missing_docs, unreachable_pub, clippy::all, reason = "generated code")]
mod server {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.A2AService.rs"));
}

pub use pb::a2a_service_client::A2aServiceClient;
// tonic's manual generator names the server after the service as written
// (`A2AService`).
pub use server::a2_a_service_server::{
    A2AService as A2aServiceRpc, A2AServiceServer as A2aServiceServer,
};

/// The gRPC path prefix of the service.
pub const SERVICE_PATH: &str = "/lf.a2a.v1.A2AService";
/// The `type_url` of a `google.rpc.ErrorInfo` in status details.
pub use super::errors::ERROR_INFO_TYPE;

/// A `lf.a2a.v1.Task` encoded as protobuf (what GetTask answers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedTask(pub Bytes);

impl EncodedTask {
    /// Decodes the task (for in-process callers of the service).
    pub fn decode(&self) -> Result<pb::Task, prost::DecodeError> {
        prost::Message::decode(self.0.clone())
    }
}

/// GetTask's server codec: the request decoded by prost, the answer's bytes
/// written as they are.
#[derive(Clone, Debug, Default)]
pub struct EncodedTaskCodec;

impl Codec for EncodedTaskCodec {
    type Encode = EncodedTask;
    type Decode = pb::GetTaskRequest;
    type Encoder = EncodedTaskEncoder;
    type Decoder = ProstDecoder<pb::GetTaskRequest>;

    fn encoder(&mut self) -> Self::Encoder {
        EncodedTaskEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<pb::Task, pb::GetTaskRequest>::default().decoder()
    }
}

/// Writes an [`EncodedTask`]'s bytes.
#[derive(Clone, Debug, Default)]
pub struct EncodedTaskEncoder;

impl Encoder for EncodedTaskEncoder {
    type Item = EncodedTask;
    type Error = Status;

    fn encode(&mut self, item: EncodedTask, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put_slice(&item.0);
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// `google.rpc.Status`, as carried in the `grpc-status-details-bin` trailer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcStatus {
    /// The gRPC code.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message.
    #[prost(string, tag = "2")]
    pub message: String,
    /// Typed details.
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<crate::wkt::Any>,
}

/// `google.rpc.ErrorInfo`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ErrorInfo {
    /// The reason (`TASK_NOT_FOUND`, …).
    #[prost(string, tag = "1")]
    pub reason: String,
    /// The domain (`a2a-protocol.org`).
    #[prost(string, tag = "2")]
    pub domain: String,
    /// Extra metadata.
    #[prost(map = "string, string", tag = "3")]
    pub metadata: HashMap<String, String>,
}

/// `google.rpc.RetryInfo`: how long to wait before retrying.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RetryInfo {
    /// The delay.
    #[prost(message, optional, tag = "1")]
    pub retry_delay: Option<ProtoDuration>,
}

/// `google.protobuf.Duration`.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct ProtoDuration {
    /// Whole seconds.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds past them.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use prost::Message as _;

    #[test]
    fn the_encoded_task_round_trips() {
        let task = pb::Task {
            id: "t1".into(),
            context_id: "c1".into(),
            ..Default::default()
        };
        let e = EncodedTask(task.encode_to_vec().into());
        assert_eq!(e.decode().unwrap(), task);
    }
}
