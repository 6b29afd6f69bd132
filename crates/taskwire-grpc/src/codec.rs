//! GetTask's answer as tonic's server sends it: a `Task` encoded as protobuf
//! already, and the codec that writes those bytes as the call's one message.
//!
//! Clients poll GetTask; the A2A service keeps the encoding of each task version
//! it answered ([`taskwire_a2a::service::A2aService::get_task_proto`]), so a task
//! polled again is neither converted to `pb::Task` nor encoded again. Everything
//! else about the call (framing, compression, size limits, trailers) is tonic's,
//! as for every other method.

use bytes::{BufMut, Bytes};
use taskwire_a2a::pb;
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic::Status;
use tonic_prost::{ProstCodec, ProstDecoder};

/// A `lf.a2a.v1.Task` encoded as protobuf (what GetTask answers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedTask(pub Bytes);

impl EncodedTask {
    /// Decodes the task (for in-process callers of the service).
    pub fn decode(&self) -> Result<pb::Task, prost::DecodeError> {
        prost::Message::decode(self.0.clone())
    }
}

/// GetTask's codec: the request decoded by prost, the answer's bytes written as
/// they are.
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
