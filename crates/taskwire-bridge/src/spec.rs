//! Upstream specs: which upstream executor a URL names, by its scheme.

use crate::error::BridgeError;

/// An upstream the bridge can forward tasks to, parsed from `--upstream URL`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpstreamSpec {
    /// `a2a+http://…` or `a2a+https://…`: an A2A agent over JSON-RPC. The part
    /// after `a2a+` is the base URL its agent card is discovered from
    /// (`{base}/.well-known/agent-card.json`).
    A2aJsonRpc {
        /// The base URL, without a trailing slash.
        base_url: String,
    },
    /// `a2a+grpc://host:port`: an A2A agent over gRPC (h2c), at
    /// `http://host:port`; `a2a+grpcs://host:port`: over TLS, at
    /// `https://host:port`.
    A2aGrpc {
        /// `http://host:port` or `https://host:port`.
        target: String,
    },
    /// `mcp+http://…/mcp[#tool]` or `mcp+https://…`: an MCP server over
    /// Streamable HTTP; the URL without `mcp+` and the fragment is its
    /// endpoint, the fragment the one tool to serve (all tools without it).
    Mcp {
        /// The endpoint URL.
        endpoint: String,
        /// The tool of `#tool`.
        tool: Option<String>,
    },
    /// `agui+http://…/path` or `agui+https://…`: an AG-UI agent, whose run
    /// endpoint is the URL without `agui+`.
    Agui {
        /// The run endpoint.
        endpoint: String,
    },
}

impl UpstreamSpec {
    /// Parses an upstream URL. `a2a+http(s)://host[:port][/path]` is an A2A
    /// JSON-RPC upstream, `a2a+grpc://host:port` an A2A gRPC upstream (h2c;
    /// `a2a+grpcs://` over TLS);
    /// `mcp+http(s)://…/mcp[#tool]` an MCP server (its one `#tool`, or all of
    /// its tools); `agui+http(s)://…/path` an AG-UI agent's run endpoint; any
    /// other scheme is an error.
    pub fn parse(url: &str) -> Result<Self, BridgeError> {
        let trimmed = url.trim();
        let Some((scheme, rest)) = trimmed.split_once("://") else {
            return Err(BridgeError::UnknownScheme { url: url.into() });
        };
        let scheme_lc = scheme.to_ascii_lowercase();
        let inner = match scheme_lc.as_str() {
            "a2a+http" => "http",
            "a2a+https" => "https",
            "a2a+grpc" => "grpc",
            "a2a+grpcs" => "grpcs",
            "mcp+http" => "mcp-http",
            "mcp+https" => "mcp-https",
            "agui+http" => "agui-http",
            "agui+https" => "agui-https",
            _ => return Err(BridgeError::UnknownScheme { url: url.into() }),
        };
        let invalid = |reason: &str| BridgeError::InvalidUrl {
            url: url.into(),
            reason: reason.into(),
        };
        if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid("contains whitespace or control characters"));
        }
        let (rest, fragment) = match inner {
            "mcp-http" | "mcp-https" => match rest.split_once('#') {
                Some((r, f)) => {
                    if f.is_empty() || f.contains('#') {
                        return Err(invalid("the #tool after the endpoint is empty or repeated"));
                    }
                    (r, Some(f))
                }
                None => (rest, None),
            },
            _ => (rest, None),
        };
        if rest.contains('#') {
            return Err(invalid(
                "an A2A upstream takes no #fragment (a #tool names an MCP tool)",
            ));
        }
        if rest.contains('?') && !inner.starts_with("mcp") {
            return Err(invalid("an A2A upstream's base URL takes no ?query"));
        }
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.is_empty() {
            return Err(invalid("has no host"));
        }
        if authority.contains('@') {
            return Err(invalid(
                "credentials in the URL are not sent: use --upstream-token",
            ));
        }
        let (host, port) = match authority.strip_prefix('[') {
            // An IPv6 literal: `[addr]` or `[addr]:port`.
            Some(v6) => match v6.split_once(']') {
                Some((h, "")) => (h, None),
                Some((h, after)) => match after.strip_prefix(':') {
                    Some(p) => (h, Some(p)),
                    None => return Err(invalid("junk after the IPv6 address")),
                },
                None => return Err(invalid("an unclosed [IPv6 address")),
            },
            None => match authority.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            },
        };
        if host.is_empty() {
            return Err(invalid("has no host"));
        }
        if let Some(p) = port {
            if p.is_empty() {
                return Err(invalid("has an empty port"));
            }
            if !p.chars().all(|c| c.is_ascii_digit()) || p.parse::<u16>().is_err() {
                return Err(invalid("the port is not a number from 0 to 65535"));
            }
        }
        if let Some(tls) = inner.strip_prefix("grpc") {
            let path = &rest[authority.len()..];
            if !path.is_empty() && path != "/" {
                return Err(invalid(
                    "a gRPC upstream is host:port only (the service path is fixed)",
                ));
            }
            if port.is_none() {
                return Err(invalid("a gRPC upstream needs a port (host:port)"));
            }
            let scheme = if tls == "s" { "https" } else { "http" };
            return Ok(UpstreamSpec::A2aGrpc {
                target: format!("{scheme}://{authority}"),
            });
        }
        if let Some(scheme) = inner.strip_prefix("agui-") {
            return Ok(UpstreamSpec::Agui {
                endpoint: format!("{scheme}://{}", rest.trim_end_matches('/')),
            });
        }
        if let Some(scheme) = inner.strip_prefix("mcp-") {
            return Ok(UpstreamSpec::Mcp {
                endpoint: format!("{scheme}://{rest}"),
                tool: fragment.map(str::to_string),
            });
        }
        let base_url = format!("{inner}://{}", rest.trim_end_matches('/'));
        Ok(UpstreamSpec::A2aJsonRpc { base_url })
    }

    /// The protocol name, for logs and the agent description.
    pub fn protocol(&self) -> &'static str {
        match self {
            UpstreamSpec::A2aJsonRpc { .. } => "A2A JSON-RPC",
            UpstreamSpec::A2aGrpc { .. } => "A2A gRPC",
            UpstreamSpec::Mcp { .. } => "MCP",
            UpstreamSpec::Agui { .. } => "AG-UI",
        }
    }

    /// The URL the upstream is reached at (without the protocol prefix).
    pub fn base_url(&self) -> &str {
        match self {
            UpstreamSpec::A2aJsonRpc { base_url } => base_url,
            UpstreamSpec::A2aGrpc { target } => target,
            UpstreamSpec::Mcp { endpoint, .. } => endpoint,
            UpstreamSpec::Agui { endpoint } => endpoint,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(url: &str) -> String {
        match UpstreamSpec::parse(url) {
            Ok(UpstreamSpec::A2aJsonRpc { base_url }) => base_url,
            Ok(other) => panic!("{url}: {other:?}"),
            Err(e) => panic!("{url}: {e}"),
        }
    }

    #[test]
    fn a2a_http_and_https_are_json_rpc_upstreams() {
        assert_eq!(base("a2a+http://127.0.0.1:7420"), "http://127.0.0.1:7420");
        assert_eq!(base("a2a+http://127.0.0.1:7420/"), "http://127.0.0.1:7420");
        assert_eq!(
            base("a2a+https://agents.example.com/team/a"),
            "https://agents.example.com/team/a"
        );
        assert_eq!(base("A2A+HTTP://h:1"), "http://h:1");
        assert_eq!(base("a2a+http://[::1]:8080/x"), "http://[::1]:8080/x");
        assert_eq!(base("  a2a+http://h  "), "http://h");
    }

    #[test]
    fn agui_is_a_run_endpoint() {
        for (url, want) in [
            (
                "agui+http://127.0.0.1:7420/agui",
                "http://127.0.0.1:7420/agui",
            ),
            ("AGUI+HTTPS://h/x/agui/", "https://h/x/agui"),
        ] {
            match UpstreamSpec::parse(url) {
                Ok(UpstreamSpec::Agui { endpoint }) => assert_eq!(endpoint, want),
                other => panic!("{url}: {other:?}"),
            }
        }
        for url in [
            "agui+http://h/agui#x",
            "agui+http://h/agui?x=1",
            "agui+http://",
        ] {
            assert!(
                matches!(
                    UpstreamSpec::parse(url),
                    Err(BridgeError::InvalidUrl { .. })
                ),
                "{url}: {:?}",
                UpstreamSpec::parse(url)
            );
        }
    }

    #[test]
    fn a2a_grpc_is_a_host_and_port() {
        let grpc = |url: &str| match UpstreamSpec::parse(url) {
            Ok(UpstreamSpec::A2aGrpc { target }) => target,
            other => panic!("{url}: {other:?}"),
        };
        assert_eq!(grpc("a2a+grpc://127.0.0.1:50051"), "http://127.0.0.1:50051");
        assert_eq!(grpc("a2a+grpc://h:1/"), "http://h:1");
        assert_eq!(grpc("A2A+GRPC://[::1]:9"), "http://[::1]:9");
        assert_eq!(
            grpc("a2a+grpcs://agents.example.com:443"),
            "https://agents.example.com:443"
        );
        for url in [
            "a2a+grpc://h",
            "a2a+grpc://h:1/lf.a2a.v1.A2AService",
            "a2a+grpc://h:1#x",
            "a2a+grpc://h:1?x",
            "a2a+grpc://u@h:1",
        ] {
            assert!(
                matches!(
                    UpstreamSpec::parse(url),
                    Err(BridgeError::InvalidUrl { .. })
                ),
                "{url}: {:?}",
                UpstreamSpec::parse(url)
            );
        }
    }

    #[test]
    fn mcp_is_an_endpoint_and_an_optional_tool() {
        let mcp = |url: &str| match UpstreamSpec::parse(url) {
            Ok(UpstreamSpec::Mcp { endpoint, tool }) => (endpoint, tool),
            other => panic!("{url}: {other:?}"),
        };
        assert_eq!(
            mcp("mcp+http://127.0.0.1:7420/mcp#run_script"),
            (
                "http://127.0.0.1:7420/mcp".into(),
                Some("run_script".into())
            )
        );
        assert_eq!(
            mcp("mcp+https://h/team/mcp"),
            ("https://h/team/mcp".into(), None)
        );
        assert_eq!(
            mcp("mcp+http://h:1/mcp?key=v#t"),
            ("http://h:1/mcp?key=v".into(), Some("t".into()))
        );
        for url in [
            "mcp+http://h/mcp#",
            "mcp+http://h/mcp#a#b",
            "mcp+http://",
            "mcp+http://u@h/mcp",
        ] {
            assert!(
                matches!(
                    UpstreamSpec::parse(url),
                    Err(BridgeError::InvalidUrl { .. })
                ),
                "{url}: {:?}",
                UpstreamSpec::parse(url)
            );
        }
    }

    #[test]
    fn other_schemes_and_bad_urls_are_errors() {
        for url in [
            "http://127.0.0.1:7420",
            "ftp://h",
            "a2a://h",
            "a2a+ws://h",
            "127.0.0.1:7420",
            "",
        ] {
            assert!(
                matches!(
                    UpstreamSpec::parse(url),
                    Err(BridgeError::UnknownScheme { .. })
                ),
                "{url}"
            );
        }
        for url in [
            "a2a+http://",
            "a2a+http:///a2a",
            "a2a+http://h:/",
            "a2a+http://h:port",
            "a2a+http://h/a#tool",
            "a2a+http://h/a?x=1",
            "a2a+http://user:pw@h",
            "a2a+http://h /a",
        ] {
            assert!(
                matches!(
                    UpstreamSpec::parse(url),
                    Err(BridgeError::InvalidUrl { .. })
                ),
                "{url}: {:?}",
                UpstreamSpec::parse(url)
            );
        }
    }
}
