//! The agent card: built from the agent's info and the adapter config, with urls
//! under the configured public base url (never the bind address).

use std::collections::HashMap;

use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use taskwire_core::AgentInfo;

use crate::http::{PROTOCOL_VERSION, PROTOCOL_VERSION_1_1};
use crate::{pb, A2aConfig, GrpcCardUrl};

/// Where the agent card is served.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// The JSON-RPC binding's path under the public url.
pub const JSONRPC_PATH: &str = "/a2a";
/// The HTTP+JSON binding's base path under the public url.
pub const REST_PATH: &str = crate::http::REST_PATH;
/// Name of the bearer security scheme on the card.
pub const BEARER_SCHEME: &str = "bearer";
/// Name of the OAuth 2.0 security scheme of the first issuer on the card (the
/// next ones get `-2`, `-3`, …).
pub const OAUTH2_SCHEME: &str = "oauth2";
/// Name of the OpenID Connect security scheme of the first issuer on the card.
pub const OIDC_SCHEME: &str = "oidc";

/// An OAuth 2.0 / OpenID Connect issuer whose access tokens the server accepts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CardOAuth {
    /// Its metadata URL (RFC 8414 or OpenID Connect Discovery).
    pub metadata_url: String,
    /// Its OpenID Connect discovery URL, if it is an OpenID provider.
    pub openid_url: Option<String>,
    /// Its token endpoint, when it offers the client credentials grant.
    pub client_credentials_token_url: Option<String>,
    /// The scopes the server checks, with what each grants.
    pub scopes: Vec<(String, String)>,
}

impl CardOAuth {
    /// An issuer whose metadata is at `metadata_url`, and its OpenID Connect
    /// discovery URL if it is an OpenID provider.
    pub fn new(metadata_url: impl Into<String>, openid_url: Option<String>) -> Self {
        Self {
            metadata_url: metadata_url.into(),
            openid_url,
            ..Self::default()
        }
    }

    /// With the client credentials flow at `token_url`.
    pub fn with_client_credentials(mut self, token_url: impl Into<String>) -> Self {
        self.client_credentials_token_url = Some(token_url.into());
        self
    }

    /// With a scope and what it grants.
    pub fn with_scope(mut self, scope: impl Into<String>, grants: impl Into<String>) -> Self {
        self.scopes.push((scope.into(), grants.into()));
        self
    }
}

/// The card's `securitySchemes` and `securityRequirements`: one requirement per
/// scheme (any one of them will do): the token file's HTTP bearer, and for each
/// issuer an OAuth 2.0 scheme (its metadata URL; the client credentials flow
/// when it offers it, with the scopes) and, for an OpenID provider, an OpenID
/// Connect scheme. Each OAuth requirement names the read scope.
fn security(
    cfg: &A2aConfig,
) -> (
    HashMap<String, pb::SecurityScheme>,
    Vec<pb::SecurityRequirement>,
) {
    use pb::security_scheme::Scheme;
    let mut schemes = HashMap::new();
    let mut reqs = Vec::new();
    let mut require = |name: String, scopes: Vec<String>, scheme: Scheme| {
        reqs.push(pb::SecurityRequirement {
            schemes: HashMap::from([(name.clone(), pb::StringList { list: scopes })]),
        });
        schemes.insert(
            name,
            pb::SecurityScheme {
                scheme: Some(scheme),
            },
        );
    };
    if cfg.bearer_auth {
        require(
            BEARER_SCHEME.to_string(),
            Vec::new(),
            Scheme::HttpAuthSecurityScheme(pb::HttpAuthSecurityScheme {
                description: "A bearer token from the server's --auth-tokens".into(),
                scheme: "Bearer".into(),
                bearer_format: String::new(),
            }),
        );
    }
    for (i, o) in cfg.oauth.iter().enumerate() {
        let suffix = if i == 0 {
            String::new()
        } else {
            format!("-{}", i + 1)
        };
        let first_scope: Vec<String> = o.scopes.first().map(|s| s.0.clone()).into_iter().collect();
        let flows = o
            .client_credentials_token_url
            .as_ref()
            .map(|token_url| pb::OAuthFlows {
                flow: Some(pb::o_auth_flows::Flow::ClientCredentials(
                    pb::ClientCredentialsOAuthFlow {
                        token_url: token_url.clone(),
                        refresh_url: String::new(),
                        scopes: o.scopes.iter().cloned().collect(),
                    },
                )),
            });
        require(
            format!("{OAUTH2_SCHEME}{suffix}"),
            first_scope.clone(),
            Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
                description: "An access token (a JWT) from this authorization server, for this agent's URL as its audience".into(),
                flows,
                oauth2_metadata_url: o.metadata_url.clone(),
            }),
        );
        if let Some(url) = &o.openid_url {
            require(
                format!("{OIDC_SCHEME}{suffix}"),
                first_scope,
                Scheme::OpenIdConnectSecurityScheme(pb::OpenIdConnectSecurityScheme {
                    description: "An access token (a JWT) from this OpenID provider, for this agent's URL as its audience".into(),
                    open_id_connect_url: url.clone(),
                }),
            );
        }
    }
    (schemes, reqs)
}

/// `host:port` of a base url (the gRPC interface url), defaulting the port from
/// the scheme.
pub fn host_port(base: &str) -> String {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let has_port = match authority.rfind(']') {
        Some(i) => authority[i..].contains(':'),
        None => authority.contains(':'),
    };
    if has_port {
        authority.to_string()
    } else if base.starts_with("https://") {
        format!("{authority}:443")
    } else {
        format!("{authority}:80")
    }
}

/// The origin of a base url, `scheme://host[:port]` (RFC 6454's
/// serialisation: a default port is left out); the base itself when it does
/// not parse.
pub fn origin(base: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(u) if u.origin().is_tuple() => u.origin().ascii_serialization(),
        _ => base.to_string(),
    }
}

/// The card's `ETag` (A2A 1.0 §8.6.1): a strong tag of the first 128 bits
/// of the SHA-256 of the card's JSON text, in hex. It changes with any field
/// of the card and is the same on every node that serves the same card.
pub fn etag(card_json: &str) -> String {
    let digest = Sha256::digest(card_json.as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether the request's `If-None-Match` matches `etag` (RFC 9110 §13.1.2:
/// weak comparison, a comma list, or `*`): the card is then answered 304.
pub fn none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
}

/// The card (`extended` marks the authenticated variant).
pub fn build(info: &AgentInfo, cfg: &A2aConfig, extended: bool) -> pb::AgentCard {
    let base = cfg.public_url.trim_end_matches('/');
    let mut interfaces = vec![pb::AgentInterface {
        url: format!("{base}{JSONRPC_PATH}"),
        protocol_binding: "JSONRPC".into(),
        tenant: String::new(),
        protocol_version: PROTOCOL_VERSION.into(),
    }];
    let grpc_url = match cfg.grpc_card_url {
        _ if !cfg.grpc => None,
        GrpcCardUrl::HostPort => Some(host_port(base)),
        GrpcCardUrl::Origin => Some(origin(base)),
        GrpcCardUrl::Omit => None,
    };
    if let Some(url) = grpc_url {
        interfaces.push(pb::AgentInterface {
            url,
            protocol_binding: "GRPC".into(),
            tenant: String::new(),
            protocol_version: PROTOCOL_VERSION.into(),
        });
    }
    interfaces.push(pb::AgentInterface {
        url: format!("{base}{REST_PATH}"),
        protocol_binding: "HTTP+JSON".into(),
        tenant: String::new(),
        protocol_version: PROTOCOL_VERSION.into(),
    });
    // The A2A 1.1 draft on the same urls, after every 1.0 interface (clients
    // that take the first interface of a binding keep getting 1.0).
    let v1_1: Vec<pb::AgentInterface> = interfaces
        .iter()
        .map(|i| pb::AgentInterface {
            protocol_version: PROTOCOL_VERSION_1_1.into(),
            ..i.clone()
        })
        .collect();
    interfaces.extend(v1_1);
    let (security_schemes, security_requirements) = security(cfg);
    let description = if extended {
        format!("{} (extended card)", info.description)
    } else {
        info.description.clone()
    };
    pb::AgentCard {
        name: info.name.clone(),
        description,
        supported_interfaces: interfaces,
        provider: None,
        version: info.version.clone(),
        documentation_url: None,
        capabilities: Some(pb::AgentCapabilities {
            streaming: Some(cfg.streaming),
            push_notifications: Some(cfg.push_notifications),
            extensions: Vec::new(),
            extended_agent_card: Some(cfg.extended_card),
        }),
        security_schemes,
        security_requirements,
        default_input_modes: cfg.input_modes.clone(),
        default_output_modes: vec!["text/plain".into(), "application/json".into()],
        skills: info
            .skills
            .iter()
            .map(|s| pb::AgentSkill {
                id: s.id.clone(),
                name: s.name.clone(),
                description: s.description.clone(),
                tags: vec![s.id.clone()],
                examples: Vec::new(),
                input_modes: Vec::new(),
                output_modes: Vec::new(),
                security_requirements: Vec::new(),
            })
            .collect(),
        signatures: Vec::new(),
        icon_url: None,
    }
}

#[cfg(test)]
mod tests {
    use super::{etag, host_port, none_match};
    use axum::http::{header, HeaderMap, HeaderValue};

    #[test]
    fn etag_follows_the_content_and_if_none_match_compares_weakly() {
        let a = etag(r#"{"name":"a"}"#);
        assert_eq!(a, etag(r#"{"name":"a"}"#));
        assert_ne!(a, etag(r#"{"name":"b"}"#));
        assert!(a.starts_with('"') && a.ends_with('"') && a.len() == 34);
        let mut h = HeaderMap::new();
        assert!(!none_match(&h, &a));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&format!("\"x\", W/{a}")).unwrap(),
        );
        assert!(none_match(&h, &a));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"x\""));
        assert!(!none_match(&h, &a));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(none_match(&h, &a));
    }

    #[test]
    fn grpc_url_is_host_port() {
        assert_eq!(host_port("http://127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(
            host_port("https://agents.example.com/base"),
            "agents.example.com:443"
        );
        assert_eq!(host_port("http://[::1]:9000/x"), "[::1]:9000");
        assert_eq!(host_port("http://example.com"), "example.com:80");
        assert_eq!(
            super::origin("https://agents.example.com/base"),
            "https://agents.example.com"
        );
        assert_eq!(
            super::origin("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080"
        );
    }
}
