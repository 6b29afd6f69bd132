//! HPACK (RFC 7541): the header decoder of the HTTP/2 server, and the few
//! encodings it writes.
//!
//! The decoder keeps each dynamic-table entry already parsed into a
//! [`HeaderName`] and [`HeaderValue`], so that a header a client sends by index
//! (what every client does from its second request on) costs two reference-count
//! increments. The encoder never indexes: it writes literals without indexing and
//! the static table's indexes, so the peer's table settings never bind it.

use std::collections::VecDeque;
use std::sync::OnceLock;

use axum::http::{HeaderName, HeaderValue};
use bytes::Bytes;

/// Why a header block could not be decoded: a connection error of type
/// COMPRESSION_ERROR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HpackError {
    /// The block ended inside a representation.
    #[error("header block truncated")]
    Truncated,
    /// An integer too large for this decoder.
    #[error("integer overflow")]
    Overflow,
    /// An index that names no entry.
    #[error("header index {0} out of range")]
    BadIndex(usize),
    /// A Huffman-coded string that is not valid (EOS, or bad padding).
    #[error("invalid Huffman code")]
    Huffman,
    /// A dynamic table size update over the limit or after the first field.
    #[error("invalid dynamic table size update")]
    SizeUpdate,
}

/// A pseudo-header field of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pseudo {
    Method,
    Scheme,
    Authority,
    Path,
    Protocol,
    Status,
    /// A name starting with `:` that HTTP/2 does not define.
    Unknown,
}

/// A decoded field name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Name {
    Pseudo(Pseudo),
    Header(HeaderName),
    /// Not a valid HTTP/2 field name (upper case, forbidden octets): the request
    /// that carries it is malformed.
    Invalid,
}

/// A decoded field: its name and value (`None` when the value has octets a
/// field value may not have: the request is malformed).
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) name: Name,
    pub(crate) value: Option<HeaderValue>,
}

impl Field {
    fn parse(name: &[u8], value: Bytes) -> Field {
        Field {
            name: parse_name(name),
            value: HeaderValue::from_maybe_shared(value).ok(),
        }
    }
}

fn parse_name(name: &[u8]) -> Name {
    if let Some(rest) = name.strip_prefix(b":") {
        return Name::Pseudo(match rest {
            b"method" => Pseudo::Method,
            b"scheme" => Pseudo::Scheme,
            b"authority" => Pseudo::Authority,
            b"path" => Pseudo::Path,
            b"protocol" => Pseudo::Protocol,
            b"status" => Pseudo::Status,
            _ => Pseudo::Unknown,
        });
    }
    // `from_lowercase` refuses upper case, which HTTP/2 forbids in field names.
    HeaderName::from_lowercase(name).map_or(Name::Invalid, Name::Header)
}

/// RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

fn static_fields() -> &'static [Field] {
    static FIELDS: OnceLock<Vec<Field>> = OnceLock::new();
    FIELDS.get_or_init(|| {
        STATIC
            .iter()
            .map(|(n, v)| Field::parse(n.as_bytes(), Bytes::from_static(v.as_bytes())))
            .collect()
    })
}

/// One dynamic-table entry: the field and its RFC 7541 size (name and value
/// octets plus 32).
#[derive(Debug)]
struct Entry {
    field: Field,
    size: usize,
    name_len: usize,
}

/// The header table size this server advertises (the default): the most a
/// client's dynamic table may hold.
pub(crate) const TABLE_LIMIT: usize = 4096;

/// The HPACK decoder of one connection.
#[derive(Debug)]
pub(crate) struct Decoder {
    table: VecDeque<Entry>,
    size: usize,
    max_size: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Self {
            table: VecDeque::new(),
            size: 0,
            max_size: TABLE_LIMIT,
        }
    }
}

impl Decoder {
    /// Decodes one complete header block, handing each field to `f` in order.
    /// An error leaves the decoder unusable (the connection must end).
    pub(crate) fn decode(
        &mut self,
        block: &Bytes,
        mut f: impl FnMut(Field),
    ) -> Result<(), HpackError> {
        let mut at = 0;
        let mut first = true;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                // Indexed field.
                let (i, n) = int(&block[at..], 7)?;
                at += n;
                f(self.get(i)?.clone());
            } else if b & 0x40 != 0 {
                // Literal with incremental indexing.
                let (field, name_len, size, n) = self.literal(block, at, 6)?;
                at += n;
                self.insert(field.clone(), name_len, size);
                f(field);
            } else if b & 0x20 != 0 {
                // Dynamic table size update: only before the first field.
                let (size, n) = int(&block[at..], 5)?;
                at += n;
                if !first || size > TABLE_LIMIT {
                    return Err(HpackError::SizeUpdate);
                }
                self.max_size = size;
                self.evict(0);
                continue;
            } else {
                // Literal without indexing (0000) or never indexed (0001).
                let (field, _, _, n) = self.literal(block, at, 4)?;
                at += n;
                f(field);
            }
            first = false;
        }
        Ok(())
    }

    fn get(&self, index: usize) -> Result<&Field, HpackError> {
        self.entry(index).map(|(f, _)| f)
    }

    /// The field at `index` and the length of its name as sent.
    fn entry(&self, index: usize) -> Result<(&Field, usize), HpackError> {
        match index {
            0 => Err(HpackError::BadIndex(0)),
            1..=61 => Ok((&static_fields()[index - 1], STATIC[index - 1].0.len())),
            _ => self
                .table
                .get(index - 62)
                .map(|e| (&e.field, e.name_len))
                .ok_or(HpackError::BadIndex(index)),
        }
    }

    /// A literal representation at `at` whose name index has a `prefix`-bit
    /// prefix: the field, the length of its name, its table size, and the octets
    /// it took.
    fn literal(
        &self,
        block: &Bytes,
        at: usize,
        prefix: u32,
    ) -> Result<(Field, usize, usize, usize), HpackError> {
        let (index, mut n) = int(&block[at..], prefix)?;
        let (name, name_len) = if index == 0 {
            let (raw, used) = string(block, at + n)?;
            n += used;
            (parse_name(&raw), raw.len())
        } else {
            let (f, len) = self.entry(index)?;
            (f.name.clone(), len)
        };
        let (value, used) = string(block, at + n)?;
        n += used;
        let size = name_len + value.len() + 32;
        let field = Field {
            name,
            value: HeaderValue::from_maybe_shared(value).ok(),
        };
        Ok((field, name_len, size, n))
    }

    fn insert(&mut self, field: Field, name_len: usize, size: usize) {
        if size > self.max_size {
            // An entry larger than the table empties it (RFC 7541 4.4).
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front(Entry {
            field,
            size,
            name_len,
        });
    }

    /// Evicts the oldest entries until `room` more octets fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size,
                None => break,
            }
        }
    }
}

/// An integer with an `prefix`-bit prefix: its value and the octets it took.
fn int(buf: &[u8], prefix: u32) -> Result<(usize, usize), HpackError> {
    let first = *buf.first().ok_or(HpackError::Truncated)?;
    let max = (1usize << prefix) - 1;
    let mut v = usize::from(first) & max;
    if v < max {
        return Ok((v, 1));
    }
    let mut shift = 0u32;
    for (i, &b) in buf[1..].iter().enumerate() {
        if shift > 28 {
            return Err(HpackError::Overflow);
        }
        v = v
            .checked_add(usize::from(b & 0x7f) << shift)
            .ok_or(HpackError::Overflow)?;
        if b & 0x80 == 0 {
            return Ok((v, i + 2));
        }
        shift += 7;
    }
    Err(HpackError::Truncated)
}

/// A string literal at `at`: its octets and the octets it took.
fn string(block: &Bytes, at: usize) -> Result<(Bytes, usize), HpackError> {
    let rest = block.get(at..).ok_or(HpackError::Truncated)?;
    let huffman = rest.first().ok_or(HpackError::Truncated)? & 0x80 != 0;
    let (len, n) = int(rest, 7)?;
    let end = n.checked_add(len).ok_or(HpackError::Overflow)?;
    if end > rest.len() {
        return Err(HpackError::Truncated);
    }
    let raw = block.slice(at + n..at + end);
    if huffman {
        Ok((Bytes::from(huffman_decode(&raw)?), end))
    } else {
        Ok((raw, end))
    }
}

/// The code length of each symbol (0-255, and EOS = 256) of the HPACK Huffman
/// code (RFC 7541 Appendix B). The code is canonical: codes are assigned in
/// order of length, then symbol, so the lengths determine every code.
const CODE_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The canonical code as decoding tables: per length, the first code and the
/// position of its symbol in `symbols` (sorted by length, then value).
struct Canonical {
    first_code: [u32; 31],
    first_index: [u16; 31],
    count: [u16; 31],
    symbols: [u16; 257],
}

fn canonical() -> &'static Canonical {
    static TABLE: OnceLock<Canonical> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut c = Canonical {
            first_code: [0; 31],
            first_index: [0; 31],
            count: [0; 31],
            symbols: [0; 257],
        };
        for &l in &CODE_LENGTHS {
            c.count[usize::from(l)] += 1;
        }
        let mut code = 0u32;
        let mut index = 0u16;
        for len in 1..31 {
            c.first_code[len] = code;
            c.first_index[len] = index;
            code = (code + u32::from(c.count[len])) << 1;
            index += c.count[len];
        }
        let mut next = c.first_index;
        for (sym, &l) in CODE_LENGTHS.iter().enumerate() {
            let l = usize::from(l);
            c.symbols[usize::from(next[l])] = sym as u16;
            next[l] += 1;
        }
        c
    })
}

/// The code and length of `sym` (for tests and the encoder of tests).
#[cfg(test)]
pub(crate) fn huffman_code(sym: usize) -> (u32, u8) {
    let c = canonical();
    let l = CODE_LENGTHS[sym];
    let pos = c
        .symbols
        .iter()
        .position(|&s| usize::from(s) == sym)
        .unwrap_or(0);
    let l_us = usize::from(l);
    let offset = pos as u32 - u32::from(c.first_index[l_us]);
    (c.first_code[l_us] + offset, l)
}

fn huffman_decode(src: &[u8]) -> Result<Vec<u8>, HpackError> {
    let c = canonical();
    let mut out = Vec::with_capacity(src.len() * 8 / 5);
    let mut code = 0u32;
    let mut len = 0usize;
    for &byte in src {
        for bit in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> bit) & 1);
            len += 1;
            if len > 30 {
                return Err(HpackError::Huffman);
            }
            let offset = code.wrapping_sub(c.first_code[len]);
            if code >= c.first_code[len] && offset < u32::from(c.count[len]) {
                let sym = c.symbols[usize::from(c.first_index[len]) + offset as usize];
                if sym == 256 {
                    return Err(HpackError::Huffman);
                }
                out.push(sym as u8);
                code = 0;
                len = 0;
            }
        }
    }
    // Padding: fewer than 8 bits, all ones (a prefix of EOS).
    if len > 7 || code != (1u32 << len) - 1 {
        return Err(HpackError::Huffman);
    }
    Ok(out)
}

/// Appends an integer with a `prefix`-bit prefix, the prefix's high bits `first`.
pub(crate) fn put_int(out: &mut Vec<u8>, first: u8, prefix: u32, v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    let mut v = v - max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// Appends a string literal, not Huffman-coded.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Appends `:status`: indexed when the static table has the code, else a
/// literal without indexing.
pub(crate) fn put_status(out: &mut Vec<u8>, status: u16) {
    let index = match status {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => 0,
    };
    if index != 0 {
        out.push(0x80 | index);
        return;
    }
    put_int(out, 0, 4, 8);
    put_str(out, status.to_string().as_bytes());
}

/// Appends a header as a literal without indexing, its name by static index when
/// the table has it.
pub(crate) fn put_header(out: &mut Vec<u8>, name: &HeaderName, value: &HeaderValue) {
    let n = name.as_str();
    let index = match n {
        "content-type" => Some(31),
        "content-length" => Some(28),
        "date" => Some(33),
        "cache-control" => Some(24),
        "www-authenticate" => Some(61),
        _ => STATIC[14..]
            .iter()
            .position(|(s, _)| *s == n)
            .map(|i| i + 15),
    };
    match index {
        Some(i) => put_int(out, 0, 4, i),
        None => {
            out.push(0);
            put_str(out, n.as_bytes());
        }
    }
    put_str(out, value.as_bytes());
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use proptest::prelude::*;

    fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
        let mut out = Vec::new();
        d.decode(&Bytes::copy_from_slice(block), |f| {
            let name = match f.name {
                Name::Header(h) => h.as_str().to_string(),
                Name::Pseudo(p) => format!("{p:?}"),
                Name::Invalid => "<invalid>".into(),
            };
            let value = f.value.map_or("<invalid>".into(), |v| {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            });
            out.push((name, value));
        })?;
        Ok(out)
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn codes_match_the_rfc_table() {
        // Entries of RFC 7541 Appendix B.
        assert_eq!(huffman_code(0), (0x1ff8, 13));
        assert_eq!(huffman_code(1), (0x7f_ffd8, 23));
        assert_eq!(huffman_code(9), (0xff_ffea, 24));
        assert_eq!(huffman_code(10), (0x3fff_fffc, 30));
        assert_eq!(huffman_code(usize::from(b'0')), (0x0, 5));
        assert_eq!(huffman_code(usize::from(b' ')), (0x14, 6));
        assert_eq!(huffman_code(usize::from(b'a')), (0x3, 5));
        assert_eq!(huffman_code(256), (0x3fff_ffff, 30));
    }

    #[test]
    fn rfc_c3_requests_without_huffman() {
        // RFC 7541 C.3: three requests on one connection, the table carried over.
        let mut d = Decoder::default();
        let r1 = fields(
            &mut d,
            &hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
        )
        .unwrap();
        assert_eq!(r1[3], ("Authority".into(), "www.example.com".into()));
        assert_eq!(d.size, 57);
        let r2 = fields(&mut d, &hex("8286 84be 5808 6e6f 2d63 6163 6865")).unwrap();
        assert_eq!(r2[3], ("Authority".into(), "www.example.com".into()));
        assert_eq!(r2[4], ("cache-control".into(), "no-cache".into()));
        assert_eq!(d.size, 110);
        let r3 = fields(
            &mut d,
            &hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"),
        )
        .unwrap();
        assert_eq!(r3[2], ("Path".into(), "/index.html".into()));
        assert_eq!(r3[4], ("custom-key".into(), "custom-value".into()));
        assert_eq!(d.size, 164);
    }

    #[test]
    fn rfc_c4_requests_with_huffman() {
        let mut d = Decoder::default();
        let r1 = fields(&mut d, &hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")).unwrap();
        assert_eq!(r1[3], ("Authority".into(), "www.example.com".into()));
        let r2 = fields(&mut d, &hex("8286 84be 5886 a8eb 1064 9cbf")).unwrap();
        assert_eq!(r2[4], ("cache-control".into(), "no-cache".into()));
        let r3 = fields(
            &mut d,
            &hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"),
        )
        .unwrap();
        assert_eq!(r3[4], ("custom-key".into(), "custom-value".into()));
        assert_eq!(d.size, 164);
    }

    #[test]
    fn eviction_follows_the_table_size() {
        // RFC 7541 C.5 sets a 256-octet table; do the same with a size update.
        let mut d = Decoder::default();
        let mut block = vec![0x3f, 0xe1, 0x01]; // size update to 256
        block.extend(hex(
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
             6c65 2e63 6f6d",
        ));
        fields(&mut d, &block).unwrap();
        assert_eq!(d.size, 222);
        // C.5.2: ":status 307" evicts ":status 302".
        let r = fields(&mut d, &hex("4803 3330 37c1 c0bf")).unwrap();
        assert_eq!(r[0].1, "307");
        assert_eq!(d.size, 222);
        assert_eq!(d.table.len(), 4);
    }

    #[test]
    fn malformed_blocks_are_errors() {
        let mut d = Decoder::default();
        assert_eq!(fields(&mut d, &[0x3f]).unwrap_err(), HpackError::Truncated);
        assert_eq!(
            fields(&mut d, &[0x80]).unwrap_err(),
            HpackError::BadIndex(0)
        );
        assert_eq!(
            fields(&mut d, &[0xbe]).unwrap_err(),
            HpackError::BadIndex(62)
        );
        // A size update after a field.
        assert_eq!(
            fields(&mut d, &[0x82, 0x20]).unwrap_err(),
            HpackError::SizeUpdate
        );
        // A size update over the advertised limit.
        assert_eq!(
            fields(&mut d, &[0x3f, 0xe2, 0x1f]).unwrap_err(),
            HpackError::SizeUpdate
        );
        // Huffman padding of zeros.
        assert_eq!(
            fields(&mut d, &[0x40, 0x81, 0x00, 0x00]).unwrap_err(),
            HpackError::Huffman
        );
        // A string longer than the block.
        assert_eq!(
            fields(&mut d, &[0x40, 0x05, b'a']).unwrap_err(),
            HpackError::Truncated
        );
        // Overlong integers.
        let mut long = vec![0xff];
        long.extend([0xff; 10]);
        assert_eq!(fields(&mut d, &long).unwrap_err(), HpackError::Overflow);
    }

    #[test]
    fn invalid_names_and_values_are_marked_not_dropped() {
        let mut d = Decoder::default();
        let mut block = vec![0x40];
        put_str(&mut block, b"Upper");
        put_str(&mut block, b"v");
        block.push(0x40);
        put_str(&mut block, b"x-ok");
        put_str(&mut block, b"bad\nvalue");
        block.push(0x40);
        put_str(&mut block, b":weird");
        put_str(&mut block, b"v");
        let f = fields(&mut d, &block).unwrap();
        assert_eq!(f[0].0, "<invalid>");
        assert_eq!(f[1], ("x-ok".into(), "<invalid>".into()));
        assert_eq!(f[2].0, "Unknown");
        // They still went into the table, in sync with the peer's encoder.
        assert_eq!(d.table.len(), 3);
    }

    #[test]
    fn encodings_decode_back() {
        let mut block = Vec::new();
        put_status(&mut block, 200);
        put_status(&mut block, 418);
        put_header(
            &mut block,
            &HeaderName::from_static("content-type"),
            &HeaderValue::from_static("application/grpc"),
        );
        put_header(
            &mut block,
            &HeaderName::from_static("grpc-status"),
            &HeaderValue::from_static("0"),
        );
        let long = "x".repeat(300);
        put_header(
            &mut block,
            &HeaderName::from_static("x-long"),
            &HeaderValue::from_str(&long).unwrap(),
        );
        let f = fields(&mut Decoder::default(), &block).unwrap();
        assert_eq!(f[0], ("Status".into(), "200".into()));
        assert_eq!(f[1], ("Status".into(), "418".into()));
        assert_eq!(f[2], ("content-type".into(), "application/grpc".into()));
        assert_eq!(f[3], ("grpc-status".into(), "0".into()));
        assert_eq!(f[4], ("x-long".into(), long));
    }

    fn huffman_encode(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u64, 0u32);
        for &b in s {
            let (code, len) = huffman_code(usize::from(b));
            acc = (acc << len) | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) as u8) | (0xff >> bits));
        }
        out
    }

    proptest! {
        #[test]
        fn huffman_round_trips(s in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(huffman_decode(&huffman_encode(&s)).unwrap(), s);
        }

        #[test]
        fn arbitrary_blocks_never_panic(block in proptest::collection::vec(any::<u8>(), 0..128)) {
            let mut d = Decoder::default();
            let _ = fields(&mut d, &block);
            prop_assert!(d.size <= d.max_size);
        }
    }
}
