//! Input limits. Everything that comes from outside is checked here before it is stored.

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::ids::validate_external_id;
use crate::types::{metadata_size, Message, Metadata};

/// Configurable limits on what callers may send.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// Largest message, all parts and metadata together, in bytes (default 1 MiB).
    pub max_message_bytes: usize,
    /// Most parts in one message (default 64).
    pub max_parts: usize,
    /// Largest metadata object on a task, message or part, in bytes (default 16 KiB).
    pub max_metadata_bytes: usize,
    /// Most messages a task's history may hold (default 10,000).
    pub max_history: usize,
    /// Most event streams (subscriptions: SSE and gRPC streams of every adapter)
    /// one caller (tenant and principal) may hold open at once in this process
    /// (default 100); one more is `TooLarge` ("open streams").
    #[serde(default = "default_streams")]
    pub max_streams_per_principal: usize,
}

fn default_streams() -> usize {
    100
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 1024 * 1024,
            max_parts: 64,
            max_metadata_bytes: 16 * 1024,
            max_history: 10_000,
            max_streams_per_principal: default_streams(),
        }
    }
}

impl Limits {
    /// Checks a message from a caller.
    pub fn check_message(&self, m: &Message) -> Result<(), CoreError> {
        validate_external_id("messageId", &m.message_id)?;
        if m.parts.is_empty() {
            return Err(CoreError::InvalidInput {
                field: "parts".into(),
                reason: "a message needs at least one part".into(),
            });
        }
        if m.parts.len() > self.max_parts {
            return Err(CoreError::TooLarge {
                what: "parts".into(),
                size: m.parts.len(),
                limit: self.max_parts,
            });
        }
        self.check_metadata("message.metadata", &m.metadata)?;
        let mut total = metadata_size(&m.metadata);
        for (i, p) in m.parts.iter().enumerate() {
            self.check_metadata(&format!("parts[{i}].metadata"), &p.metadata)?;
            total = total.saturating_add(p.approx_size());
        }
        if total > self.max_message_bytes {
            return Err(CoreError::TooLarge {
                what: "message".into(),
                size: total,
                limit: self.max_message_bytes,
            });
        }
        Ok(())
    }

    /// Checks a metadata object.
    pub fn check_metadata(&self, field: &str, m: &Metadata) -> Result<(), CoreError> {
        let size = metadata_size(m);
        if size > self.max_metadata_bytes {
            return Err(CoreError::TooLarge {
                what: field.into(),
                size,
                limit: self.max_metadata_bytes,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Part, Role};
    use serde_json::json;

    #[test]
    fn oversized_messages_are_named() {
        let l = Limits::default();
        let big = Message::user_text("x".repeat(l.max_message_bytes + 1));
        assert!(
            matches!(l.check_message(&big), Err(CoreError::TooLarge { what, .. }) if what == "message")
        );
    }

    #[test]
    fn too_many_parts_and_empty_messages() {
        let l = Limits::default();
        let many = Message::new(Role::User, vec![Part::text("a"); l.max_parts + 1]);
        assert!(
            matches!(l.check_message(&many), Err(CoreError::TooLarge { what, .. }) if what == "parts")
        );
        let none = Message::new(Role::User, vec![]);
        assert!(
            matches!(l.check_message(&none), Err(CoreError::InvalidInput { field, .. }) if field == "parts")
        );
    }

    #[test]
    fn oversized_metadata_is_named() {
        let l = Limits::default();
        let mut m = Message::user_text("hi");
        m.metadata
            .insert("blob".into(), json!("y".repeat(l.max_metadata_bytes)));
        assert!(
            matches!(l.check_message(&m), Err(CoreError::TooLarge { what, .. }) if what == "message.metadata")
        );
        let mut m = Message::user_text("hi");
        m.parts[0]
            .metadata
            .insert("blob".into(), json!("y".repeat(l.max_metadata_bytes)));
        assert!(
            matches!(l.check_message(&m), Err(CoreError::TooLarge { what, .. }) if what == "parts[0].metadata")
        );
    }

    #[test]
    fn malformed_message_ids_are_named() {
        let l = Limits::default();
        let mut m = Message::user_text("hi");
        m.message_id = String::new();
        assert!(
            matches!(l.check_message(&m), Err(CoreError::InvalidInput { field, .. }) if field == "messageId")
        );
    }
}
