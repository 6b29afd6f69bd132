//! OAuth 2.0 Protected Resource Metadata (RFC 9728) and the `WWW-Authenticate`
//! challenges that point to it (RFC 6750 §3, RFC 9728 §5.1).

use serde::Serialize;

/// The well-known path of the metadata (RFC 9728 §3).
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// A protected resource's metadata document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The resource identifier: the canonical URL clients use.
    pub resource: String,
    /// Issuers of tokens the resource accepts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource checks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// How tokens are sent: only the `Authorization` header.
    pub bearer_methods_supported: Vec<String>,
    /// A human-readable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// Where the resource is documented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
}

impl ResourceMetadata {
    /// The metadata of `resource`.
    pub fn new(
        resource: impl Into<String>,
        authorization_servers: Vec<String>,
        scopes_supported: Vec<String>,
    ) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers,
            scopes_supported,
            bearer_methods_supported: vec!["header".into()],
            resource_name: None,
            resource_documentation: None,
        }
    }

    /// This metadata with a name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }
}

/// Where the metadata of `resource` is served: the well-known path inserted
/// between the host and the resource's path (RFC 9728 §3.1):
/// `https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`.
pub fn metadata_url(resource: &str) -> Option<String> {
    let u = url::Url::parse(resource).ok()?;
    let path = u.path().trim_end_matches('/');
    let mut m = u.clone();
    m.set_path(&format!("{WELL_KNOWN}{path}"));
    m.set_query(None);
    m.set_fragment(None);
    Some(m.to_string())
}

/// An RFC 6750 `WWW-Authenticate: Bearer` challenge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge<'a> {
    /// `error` (`invalid_request`, `invalid_token`, `insufficient_scope`).
    pub error: Option<&'a str>,
    /// `error_description`.
    pub description: Option<&'a str>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<&'a str>,
    /// `resource_metadata`: where the client finds the resource's metadata.
    pub resource_metadata: Option<&'a str>,
}

impl Challenge<'_> {
    /// The header value.
    pub fn to_header(&self) -> String {
        let mut out = String::from("Bearer realm=\"taskwire\"");
        for (name, value) in [
            ("error", self.error),
            ("error_description", self.description),
            ("scope", self.scope),
            ("resource_metadata", self.resource_metadata),
        ] {
            if let Some(v) = value {
                out.push_str(", ");
                out.push_str(name);
                out.push_str("=\"");
                // A quoted-string: no `"` or `\`, visible ASCII and spaces.
                out.extend(
                    v.chars()
                        .filter(|c| (' '..='~').contains(c) && *c != '"' && *c != '\\'),
                );
                out.push('"');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_insert_the_well_known_path() {
        assert_eq!(
            metadata_url("https://h.example/mcp").as_deref(),
            Some("https://h.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            metadata_url("https://h.example").as_deref(),
            Some("https://h.example/.well-known/oauth-protected-resource")
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:7420/").as_deref(),
            Some("http://127.0.0.1:7420/.well-known/oauth-protected-resource")
        );
    }

    #[test]
    fn challenges_quote_their_parameters() {
        let c = Challenge {
            error: Some("insufficient_scope"),
            scope: Some("tasks:read tasks:write"),
            resource_metadata: Some("https://h/.well-known/oauth-protected-resource/mcp"),
            ..Challenge::default()
        };
        assert_eq!(
            c.to_header(),
            "Bearer realm=\"taskwire\", error=\"insufficient_scope\", scope=\"tasks:read tasks:write\", resource_metadata=\"https://h/.well-known/oauth-protected-resource/mcp\""
        );
        let c = Challenge {
            description: Some("a \"quoted\" \\ thing\n"),
            ..Challenge::default()
        };
        assert_eq!(
            c.to_header(),
            "Bearer realm=\"taskwire\", error_description=\"a quoted  thing\""
        );
    }
}
