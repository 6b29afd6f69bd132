//! Push-config URLs: [`taskwire_a2a::push::check_url`], the check every A2A push
//! URL passes before it is stored (and later POSTed to).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use taskwire_a2a::push::check_url;
use taskwire_webhook::non_public_kind;

/// An independent view of "not a public address" for the literal case, from the
/// standard library's predicates on the address in canonical form (an
/// IPv4-mapped IPv6 address is its IPv4 address).
fn plainly_non_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.octets()[0] == 0
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => plainly_non_public(IpAddr::V4(v4)),
            None => {
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (v6.segments()[0] & 0xfe00) == 0xfc00
                    || (v6.segments()[0] & 0xffc0) == 0xfe80
            }
        },
    }
}

/// The address a parsed URL names literally, if its host is an IP address.
fn literal_host(url: &reqwest::Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
        None => host.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// One input of `push_url`: the input (UTF-8) as a push URL. Host names are
/// checked with `allow_private` on, so nothing is resolved (a fuzzer must not
/// send DNS queries); a literal address is checked with it off. Asserts that the
/// check accepts exactly the http(s) URLs with a host, and that a URL naming a
/// loopback, private, link-local, unspecified, "this network" (0.0.0.0/8),
/// broadcast or multicast address is never accepted (however the address is
/// spelt: `0x7f.1`, `[::ffff:127.0.0.1]`, `017700000001` all parse to one). Bytes that are not UTF-8 are read as 4 or 16
/// address octets for [`non_public_kind`] alone.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        let ip = match data.len() {
            4 => Some(IpAddr::from(<[u8; 4]>::try_from(data).unwrap_or_default())),
            16 => Some(IpAddr::from(<[u8; 16]>::try_from(data).unwrap_or_default())),
            _ => None,
        };
        if let Some(ip) = ip {
            assert_eq!(
                non_public_kind(ip).is_some(),
                plainly_non_public(ip) || is_cgnat(ip),
                "{ip}"
            );
        }
        return;
    };
    let parsed = reqwest::Url::parse(text).ok();
    let web = parsed
        .as_ref()
        .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
    let literal = parsed.as_ref().and_then(literal_host);
    // Neither call below awaits anything but its own code (no resolution), so no
    // runtime is needed.
    let block_on = futures::executor::block_on;
    match literal {
        Some(ip) => {
            let r = block_on(check_url(text, false));
            if plainly_non_public(ip) {
                assert!(r.is_err(), "{text:?} names {ip} and was accepted");
            }
            if web {
                assert_eq!(
                    r.is_ok(),
                    non_public_kind(ip).is_none(),
                    "{text:?} ({ip}): {r:?}"
                );
            } else {
                assert!(
                    r.is_err(),
                    "{text:?} is not an http(s) URL and was accepted"
                );
            }
        }
        None => {
            let r = block_on(check_url(text, true));
            assert_eq!(r.is_ok(), web, "{text:?}: {r:?}");
        }
    }
}

/// 100.64.0.0/10 (carrier-grade NAT), which `non_public_kind` also refuses.
fn is_cgnat(ip: IpAddr) -> bool {
    let v4 = match ip {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4,
            None => return false,
        },
    };
    let o = v4.octets();
    o[0] == 100 && (64..128).contains(&o[1])
}
