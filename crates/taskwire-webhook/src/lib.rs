//! Outbound webhooks: what A2A push notifications and CAS push share.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use taskwire_webhook::{check_url, non_public_kind};
//!
//! // However an address is spelt, a loopback one is refused...
//! assert_eq!(non_public_kind("127.0.0.1".parse().unwrap()), Some("loopback"));
//! assert!(check_url("http://0x7f.1/hook", false).await.is_err());
//! assert!(check_url("http://[::ffff:127.0.0.1]/hook", false).await.is_err());
//! // ...unless private addresses are allowed; and only http(s) is accepted.
//! assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok());
//! assert!(check_url("ftp://93.184.216.34/", false).await.is_err());
//! # }
//! ```
//!
//! A webhook URL is chosen by a client and POSTed to by the server, so every one
//! is a way to make the server send requests into its own network (server-side
//! request forgery). Three checks stop it, each needed:
//! - [`check_url`] when the config is created: http(s), a host, and no address
//!   that [`non_public_kind`] names (unless private addresses are allowed);
//! - [`client`] at every delivery: its resolver drops the addresses
//!   [`non_public_kind`] names, so a name that resolved to a public address at
//!   creation and resolves to a private one later (DNS rebinding) is not reached;
//! - the same client never follows a redirect (an answer of 3xx is a failed
//!   attempt), so a receiver cannot forward the server's POST elsewhere.
//!
//! [`Backoff`] is the retry schedule both deliveries use. Names are resolved by
//! the system ([`SystemLookup`]) unless another [`Lookup`] is given
//! ([`check_url_with`], [`client_with`]): a test's, or a DNS client of one's own.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why a webhook URL or client was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// Not a URL at all.
    #[error("{url:?} is not a URL: {reason}")]
    NotUrl {
        /// The text given.
        url: String,
        /// What the URL parser said.
        reason: String,
    },
    /// A scheme other than http and https.
    #[error("webhook urls must be http or https")]
    Scheme,
    /// No host in the URL.
    #[error("the webhook url has no host")]
    NoHost,
    /// The host does not resolve.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host.
        host: String,
        /// What the resolver said.
        reason: String,
    },
    /// The host is, or resolves to, an address that is not public.
    #[error(
        "webhook url host {host} resolves to {ip}, a {kind} address; refused to prevent \
         server-side request forgery (the server allows it only with --push-allow-private)"
    )]
    NonPublic {
        /// The host.
        host: String,
        /// The address refused.
        ip: IpAddr,
        /// What kind of address it is ([`non_public_kind`]).
        kind: &'static str,
    },
    /// The HTTP client could not be built.
    #[error("webhook client: {0}")]
    Client(String),
}

/// Why an address is not a public one, if it is not: loopback, private (RFC 1918,
/// IPv6 unique local), link-local, shared (RFC 6598 carrier-grade NAT),
/// unspecified, broadcast, multicast and "this network" (0.0.0.0/8). IPv4-mapped
/// IPv6 addresses are judged as the IPv4 address they carry.
pub fn non_public_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast() || o[0] == 0 {
                Some("non-routable")
            } else if o[0] == 100 && (64..128).contains(&o[1]) {
                Some("shared (carrier-grade NAT)")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return non_public_kind(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            if v6.is_loopback() {
                Some("loopback")
            } else if (seg[0] & 0xfe00) == 0xfc00 {
                Some("private")
            } else if (seg[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if v6.is_unspecified() || v6.is_multicast() {
                Some("non-routable")
            } else {
                None
            }
        }
    }
}

/// Resolves a host name to its addresses: the system's resolver
/// ([`SystemLookup`], what [`check_url`] and [`client`] use), or another (a test's,
/// a DNS client of one's own) through [`check_url_with`] and [`client_with`].
pub trait Lookup: Send + Sync + std::fmt::Debug {
    /// The addresses of `host` (the port is only passed on to the resolver).
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>> {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host, port))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// Checks a webhook URL: http or https, a host, and (unless `allow_private`) no
/// address of the host's that [`non_public_kind`] names. Returns the parsed URL.
pub async fn check_url(url: &str, allow_private: bool) -> Result<reqwest::Url, WebhookError> {
    check_url_with(url, allow_private, &SystemLookup).await
}

/// [`check_url`], resolving host names with `lookup`.
pub async fn check_url_with(
    url: &str,
    allow_private: bool,
    lookup: &dyn Lookup,
) -> Result<reqwest::Url, WebhookError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| WebhookError::NotUrl {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    if parsed.scheme() != "http" && parsed.scheme() != "https" {
        return Err(WebhookError::Scheme);
    }
    let Some(host) = parsed.host_str() else {
        return Err(WebhookError::NoHost);
    };
    if allow_private {
        return Ok(parsed);
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => lookup
            .lookup(host, port)
            .await
            .map_err(|e| WebhookError::Resolve {
                host: host.to_string(),
                reason: e.to_string(),
            })?,
    };
    for ip in addrs {
        if let Some(kind) = non_public_kind(ip) {
            return Err(WebhookError::NonPublic {
                host: host.to_string(),
                ip,
                kind,
            });
        }
    }
    Ok(parsed)
}

/// The resolver of [`client`]: its [`Lookup`]'s answer less every address
/// [`non_public_kind`] names; a name left with none fails to resolve.
#[derive(Debug)]
struct PublicOnly {
    lookup: Arc<dyn Lookup>,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let lookup = self.lookup.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let all: Vec<SocketAddr> = lookup
                .lookup(&host, 0)
                .await?
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            let public: Vec<SocketAddr> = all
                .iter()
                .copied()
                .filter(|a| non_public_kind(a.ip()).is_none())
                .collect();
            if public.is_empty() {
                let refused = all.first().map(|a| a.ip());
                let e: Box<dyn std::error::Error + Send + Sync> = match refused {
                    Some(ip) => Box::new(WebhookError::NonPublic {
                        host,
                        ip,
                        kind: non_public_kind(ip).unwrap_or("non-public"),
                    }),
                    None => Box::new(WebhookError::Resolve {
                        host,
                        reason: "no addresses".into(),
                    }),
                };
                return Err(e);
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// The delivery client: `timeout` per attempt, never following redirects, and
/// (unless `allow_private`) resolving names to public addresses only. An address
/// literal in the URL is not resolved; [`check_url`] judged it when the config
/// was created.
pub fn client(timeout: Duration, allow_private: bool) -> Result<reqwest::Client, WebhookError> {
    client_with(timeout, allow_private, Arc::new(SystemLookup))
}

/// [`client`], resolving host names with `lookup` (then dropping the
/// non-public addresses unless `allow_private`).
pub fn client_with(
    timeout: Duration,
    allow_private: bool,
    lookup: Arc<dyn Lookup>,
) -> Result<reqwest::Client, WebhookError> {
    client_with_tls(timeout, allow_private, lookup, &Tls::default())
}

/// TLS settings of the delivery client for `https` receivers, beyond the
/// built-in Mozilla roots and the system's.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Tls {
    /// Certificates trusted besides the built-in and system roots (each a PEM
    /// file's contents, one or more certificates: a private CA).
    pub root_certificates_pem: Vec<Vec<u8>>,
    /// The client certificate presented to receivers that ask for one
    /// (mutual TLS): the private key and the certificate chain (leaf first),
    /// PEM, in one buffer.
    pub identity_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("root_certificates", &self.root_certificates_pem.len())
            .field("identity", &self.identity_pem.as_ref().map(|_| "…"))
            .finish()
    }
}

/// [`client_with`], with the trust and client certificate of `tls`. A PEM
/// with no certificate, or one (or an identity) that does not parse, is
/// [`WebhookError::Client`].
pub fn client_with_tls(
    timeout: Duration,
    allow_private: bool,
    lookup: Arc<dyn Lookup>,
    tls: &Tls,
) -> Result<reqwest::Client, WebhookError> {
    let mut b = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none());
    if !allow_private {
        b = b.dns_resolver(Arc::new(PublicOnly { lookup }));
    }
    for pem in &tls.root_certificates_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| WebhookError::Client(format!("root certificate: {e}")))?;
        if certs.is_empty() {
            return Err(WebhookError::Client(
                "root certificate: no PEM certificate found".into(),
            ));
        }
        for c in certs {
            b = b.add_root_certificate(c);
        }
    }
    if let Some(pem) = &tls.identity_pem {
        let id = reqwest::Identity::from_pem(pem)
            .map_err(|e| WebhookError::Client(format!("client certificate: {e}")))?;
        b = b.identity(id);
    }
    b.build().map_err(|e| WebhookError::Client(e.to_string()))
}

/// The address refusal behind a failed delivery, if that is why it failed: the
/// client's resolver found only non-public addresses for the host (DNS rebinding,
/// or a name that was never public).
pub fn refusal(e: &reqwest::Error) -> Option<&WebhookError> {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(w) = s.downcast_ref::<WebhookError>() {
            return Some(w);
        }
        src = s.source();
    }
    None
}

/// A failed delivery in one line: the refusal when the address was refused, else
/// the error with its causes.
pub fn describe_error(e: &reqwest::Error) -> String {
    if let Some(w) = refusal(e) {
        return format!("refused: {w}");
    }
    let mut out = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push_str(": ");
        out.push_str(&s.to_string());
        src = s.source();
    }
    out
}

/// Exponential backoff with jitter: `base`, doubling per attempt up to `max`,
/// plus up to half as much again at random (so receivers that failed together do
/// not get their retries together).
#[derive(Clone, Debug)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    /// Starts at `base`; never waits more than `max` (plus jitter).
    pub fn new(base: Duration, max: Duration) -> Self {
        Self { next: base, max }
    }

    /// How long to wait before the next attempt; doubles the one after.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d + jitter(d / 2)
    }
}

fn jitter(max: Duration) -> Duration {
    let mut b = [0u8; 4];
    if getrandom::fill(&mut b).is_err() {
        return Duration::ZERO;
    }
    let frac = f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX);
    max.mul_f64(frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_are_named() {
        let kind = |s: &str| non_public_kind(s.parse().unwrap());
        assert_eq!(kind("127.0.0.1"), Some("loopback"));
        assert_eq!(kind("10.1.2.3"), Some("private"));
        assert_eq!(kind("192.168.0.1"), Some("private"));
        assert_eq!(kind("169.254.169.254"), Some("link-local"));
        assert_eq!(kind("100.64.0.1"), Some("shared (carrier-grade NAT)"));
        assert_eq!(kind("224.0.0.1"), Some("non-routable"));
        assert_eq!(kind("0.1.2.3"), Some("non-routable"));
        assert_eq!(kind("::1"), Some("loopback"));
        assert_eq!(kind("fd00::1"), Some("private"));
        assert_eq!(kind("fe80::1"), Some("link-local"));
        assert_eq!(kind("ff02::1"), Some("non-routable"));
        assert_eq!(kind("::ffff:127.0.0.1"), Some("loopback"));
        assert_eq!(kind("93.184.216.34"), None);
        assert_eq!(kind("2606:4700::1"), None);
    }

    #[tokio::test]
    async fn urls_are_checked_with_a_reason() {
        let e = check_url("http://127.0.0.1:9/x", false).await.unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        let e = check_url("http://[::1]:80/", false).await.unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        assert!(matches!(
            check_url("ftp://example.com/", true).await,
            Err(WebhookError::Scheme)
        ));
        assert!(matches!(
            check_url("not a url", true).await,
            Err(WebhookError::NotUrl { .. })
        ));
        assert!(check_url("http://127.0.0.1:9/x", true).await.is_ok());
        assert!(check_url("http://8.8.8.8/hook", false).await.is_ok());
    }

    /// A receiver on loopback that counts requests and answers `status` with a
    /// `Location` of `location`.
    async fn receiver(
        status: u16,
        location: Option<String>,
    ) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let app = axum::Router::new().fallback(move || {
            let h = h.clone();
            let location = location.clone();
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                let mut r = axum::response::Response::new(axum::body::Body::empty());
                *r.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
                if let Some(l) = location {
                    r.headers_mut()
                        .insert(axum::http::header::LOCATION, l.parse().unwrap());
                }
                r
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}/hook"), hits)
    }

    #[tokio::test]
    async fn redirects_are_not_followed() {
        use std::sync::atomic::Ordering;
        let (inner, inner_hits) = receiver(200, None).await;
        let (outer, outer_hits) = receiver(307, Some(inner)).await;
        let c = client(Duration::from_secs(5), true).unwrap();
        let r = c.post(&outer).body("{}").send().await.unwrap();
        assert_eq!(r.status().as_u16(), 307);
        assert_eq!(outer_hits.load(Ordering::SeqCst), 1);
        assert_eq!(inner_hits.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn names_resolving_to_non_public_addresses_are_not_connected_to() {
        use std::sync::atomic::Ordering;
        // `localhost` resolves to loopback only: the check at connect time must
        // refuse it even though no URL check ran (as after DNS rebinding).
        let (url, hits) = receiver(200, None).await;
        let by_name = url.replace("127.0.0.1", "localhost");
        let guarded = client(Duration::from_secs(5), false).unwrap();
        let e = guarded.post(&by_name).send().await.unwrap_err();
        let mut chain = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            chain.push_str(&format!(": {s}"));
            src = s.source();
        }
        assert!(chain.contains("loopback"), "{chain}");
        assert_eq!(hits.load(Ordering::SeqCst), 0);
        // With private addresses allowed, the same name is delivered to.
        let open = client(Duration::from_secs(5), true).unwrap();
        assert!(open
            .post(&by_name)
            .send()
            .await
            .unwrap()
            .status()
            .is_success());
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    /// A name that resolves to a public address the first time it is asked for
    /// (when the config is made) and to loopback afterwards (at delivery).
    #[derive(Debug, Default)]
    struct Rebinding {
        asked: std::sync::atomic::AtomicUsize,
    }

    impl Lookup for Rebinding {
        fn lookup<'a>(
            &'a self,
            _host: &'a str,
            _port: u16,
        ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>> {
            let n = self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let ip = if n == 0 { "93.184.216.34" } else { "127.0.0.1" };
            Box::pin(async move { Ok(vec![ip.parse().unwrap()]) })
        }
    }

    #[tokio::test]
    async fn dns_rebinding_is_refused_at_delivery() {
        use std::sync::atomic::Ordering;
        let (url, hits) = receiver(200, None).await;
        // The receiver listens on loopback; the URL names it by a host name that
        // rebinds from a public address to 127.0.0.1.
        let url = url.replace("127.0.0.1", "hooks.rebind.test");
        let lookup = Arc::new(Rebinding::default());
        let checked = check_url_with(&url, false, lookup.as_ref()).await;
        assert!(checked.is_ok(), "public at creation: {checked:?}");
        let c = client_with(Duration::from_secs(5), false, lookup.clone()).unwrap();
        let e = c.post(&url).body("{}").send().await.unwrap_err();
        let mut chain = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            chain.push_str(&format!(": {s}"));
            src = s.source();
        }
        assert!(
            chain.contains("127.0.0.1") && chain.contains("loopback"),
            "{chain}"
        );
        assert_eq!(hits.load(Ordering::SeqCst), 0);
        assert_eq!(lookup.asked.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_bounded_jitter() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
        let d: Vec<Duration> = (0..4).map(|_| b.next_delay()).collect();
        let within = |d: Duration, base: u64| {
            d >= Duration::from_millis(base) && d <= Duration::from_millis(base + base / 2)
        };
        assert!(within(d[0], 100), "{d:?}");
        assert!(within(d[1], 200), "{d:?}");
        assert!(within(d[2], 300), "{d:?}");
        assert!(within(d[3], 300), "{d:?}");
    }
}
