//! ProtoJSON at the A2A adapter's edge: the wire layer's encoder and decoders
//! ([`taskwire_wire::a2a::protojson`]), with a decoding error turned into A2A's
//! InvalidParams (naming `params.<field path>`) and an encoding error into an
//! internal error.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use taskwire_wire::a2a::protojson as wire;
use taskwire_wire::WireError;

use crate::error::{A2aError, Result};

pub use wire::ProtoMessage;

/// The A2A error of a wire error: a decode error is InvalidParams at
/// `params.<path>`, anything else internal.
pub(crate) fn wire_error(e: WireError) -> A2aError {
    match e {
        WireError::Decode { path, message } if path.is_empty() => {
            A2aError::invalid_params("params", message)
        }
        WireError::Decode { path, message } => {
            A2aError::invalid_params(&format!("params.{path}"), message)
        }
        other => A2aError::internal(other),
    }
}

/// Encodes a message as a ProtoJSON value.
pub fn to_value<T: Serialize>(msg: &T) -> Result<Value> {
    wire::to_value(msg).map_err(wire_error)
}

/// Encodes a message as a ProtoJSON string.
pub fn to_string<T: Serialize>(msg: &T) -> Result<String> {
    wire::to_string(msg).map_err(wire_error)
}

/// Appends a message's ProtoJSON text to `out`.
pub fn write<T: Serialize>(out: &mut Vec<u8>, msg: &T) -> Result<()> {
    wire::write(out, msg).map_err(wire_error)
}

/// Decodes a ProtoJSON value into a message by its descriptor; a wrong field is
/// an InvalidParams error whose message names the field's path.
pub fn from_value<T: ProtoMessage>(v: Value) -> Result<T> {
    wire::from_value(v).map_err(wire_error)
}

/// Decodes ProtoJSON text straight into a message when it has no `null` literal
/// and decodes; `None` otherwise (see [`wire::from_str_without_nulls`]).
pub fn from_str_without_nulls<T: DeserializeOwned>(text: &str) -> Option<T> {
    wire::from_str_without_nulls(text)
}

/// Decodes ProtoJSON text into a message: pbjson straight from the text when
/// that applies, else the descriptor-driven decoder (naming a wrong field).
pub fn from_str<T: ProtoMessage>(text: &str) -> Result<T> {
    wire::from_str(text).map_err(wire_error)
}
