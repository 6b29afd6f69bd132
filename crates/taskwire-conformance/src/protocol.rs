//! The protocols the suite can drive.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// One protocol binding of a target, a column of the result matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// A2A 1.0 over JSON-RPC (with SSE streams).
    A2a,
    /// A2A 1.0 over gRPC.
    Grpc,
    /// A2A 1.0 over HTTP+JSON (the REST binding, with SSE streams).
    #[serde(rename = "a2a-rest")]
    A2aRest,
    /// MCP tasks (revision 2026-07-28 with the tasks extension).
    Mcp,
    /// MCP revision 2025-11-25 experimental tasks (sessions, `tasks/result`).
    #[serde(rename = "mcp-2025")]
    Mcp2025,
    /// AG-UI run-event streams.
    Agui,
    /// The CAS task status surface.
    Cas,
}

impl Protocol {
    /// Every protocol, in matrix order.
    pub const ALL: [Protocol; 7] = [
        Protocol::A2a,
        Protocol::Grpc,
        Protocol::A2aRest,
        Protocol::Mcp,
        Protocol::Mcp2025,
        Protocol::Agui,
        Protocol::Cas,
    ];

    /// The short name used on the command line, in scenario files and baselines.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::A2a => "a2a",
            Protocol::Grpc => "grpc",
            Protocol::A2aRest => "a2a-rest",
            Protocol::Mcp => "mcp",
            Protocol::Mcp2025 => "mcp-2025",
            Protocol::Agui => "agui",
            Protocol::Cas => "cas",
        }
    }

    /// Parses a comma-separated list (`a2a,grpc`); `all` means every protocol.
    pub fn parse_list(s: &str) -> Result<Vec<Protocol>, Error> {
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "all" {
                return Ok(Protocol::ALL.to_vec());
            }
            let p: Protocol = item.parse()?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out.sort();
        Ok(out)
    }
}

impl FromStr for Protocol {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| Error::UnknownProtocol(s.to_string()))
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse() {
        assert_eq!(
            Protocol::parse_list("mcp, a2a,mcp").ok(),
            Some(vec![Protocol::A2a, Protocol::Mcp])
        );
        assert_eq!(
            Protocol::parse_list("all").ok(),
            Some(Protocol::ALL.to_vec())
        );
        assert!(Protocol::parse_list("a2a,soap").is_err());
        assert_eq!(
            Protocol::parse_list("mcp-2025,mcp").ok(),
            Some(vec![Protocol::Mcp, Protocol::Mcp2025])
        );
        assert_eq!("mcp-2025".parse::<Protocol>().ok(), Some(Protocol::Mcp2025));
        assert_eq!("a2a-rest".parse::<Protocol>().ok(), Some(Protocol::A2aRest));
        assert_eq!(
            Protocol::parse_list("a2a-rest,a2a").ok(),
            Some(vec![Protocol::A2a, Protocol::A2aRest])
        );
        assert_eq!(
            serde_json::to_value(Protocol::A2aRest).ok(),
            Some(serde_json::json!("a2a-rest"))
        );
        assert_eq!(
            serde_json::to_value(Protocol::Mcp2025).ok(),
            Some(serde_json::json!("mcp-2025"))
        );
    }
}
