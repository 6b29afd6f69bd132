//! The `text/event-stream` parser every client stream reads with, written to the
//! HTML standard's parsing model ("Parsing an event stream", WHATWG HTML 9.2.6).
//!
//! Lines end at CRLF, LF or CR (also when a CRLF is split between two reads); a
//! byte order mark opening the stream is dropped; a line starting with `:` is a
//! comment; otherwise the field name is the text before the first colon (the whole
//! line when there is none) and the value what follows, less one leading space.
//! `data` appends the value and a LF to the data buffer; `event` and `id` set
//! (the last line wins; an `id` containing NUL is ignored); `retry` sets only when
//! the value is ASCII digits; any other field is ignored. A blank line dispatches
//! the event (data less its final LF). Nothing a server sends is an error except
//! an event or a line larger than the parser's limit.
//!
//! The crate the client used before (`sse-stream`) turns several lines the
//! standard accepts into stream errors (docs/fuzzing.md, finding F2), and the
//! spec-following alternative we looked at accepts `retry: +5` and has no bound on
//! a line's size; this parser is the standard's algorithm with a bound.

use crate::http::SseEvent;

/// Default largest event (or unfinished line) the parser holds: 16 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The event or line being read grew past the parser's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The limit, in bytes.
    pub limit: usize,
}

/// An incremental `text/event-stream` parser: feed it the body's bytes as they
/// arrive, take the complete events out.
#[derive(Debug)]
pub struct SseParser {
    max: usize,
    /// The bytes of the unfinished line.
    line: Vec<u8>,
    /// The stream's first bytes are still to be checked for a byte order mark.
    at_start: bool,
    /// The first bytes read while they could still be a byte order mark.
    start: Vec<u8>,
    /// The last line ended with CR: a LF opening the next read belongs to it.
    after_cr: bool,
    data: String,
    data_seen: bool,
    event: Option<String>,
    id: Option<String>,
    retry: Option<u64>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser holding at most `max_event_bytes` of one event (its data and
    /// unfinished line together).
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max: max_event_bytes.max(1),
            line: Vec::new(),
            at_start: true,
            start: Vec::new(),
            after_cr: false,
            data: String::new(),
            data_seen: false,
            event: None,
            id: None,
            retry: None,
        }
    }

    /// Reads `chunk`, appending the events it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), TooLarge> {
        if !self.at_start {
            return self.feed_lines(chunk, out);
        }
        // The stream's first bytes: a byte order mark, possibly split over reads,
        // is dropped.
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        let mut head = std::mem::take(&mut self.start);
        head.extend_from_slice(chunk);
        if head.len() < BOM.len() && BOM.starts_with(&head) {
            self.start = head;
            return Ok(());
        }
        self.at_start = false;
        self.feed_lines(head.strip_prefix(BOM).unwrap_or(&head), out)
    }

    fn feed_lines(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), TooLarge> {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            let (line, rest) = chunk.split_at(end);
            let terminator = rest[0];
            chunk = &rest[1..];
            if terminator == b'\r' {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.line.is_empty() {
                self.line_done(line, out)?;
            } else {
                self.line.extend_from_slice(line);
                let whole = std::mem::take(&mut self.line);
                self.line_done(&whole, out)?;
            }
        }
        self.line.extend_from_slice(chunk);
        self.check_size()
    }

    fn check_size(&self) -> Result<(), TooLarge> {
        if self.line.len() + self.data.len() > self.max {
            Err(TooLarge { limit: self.max })
        } else {
            Ok(())
        }
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), TooLarge> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        // Valid UTF-8 (nearly always) is checked by the fast validator;
        // only invalid bytes take the replacing path.
        let value = match std::str::from_utf8(value) {
            Ok(v) => std::borrow::Cow::Borrowed(v),
            Err(_) => String::from_utf8_lossy(value),
        };
        match name {
            b"data" => {
                // The value and its LF in one allocation (most events have
                // one data line).
                self.data.reserve(value.len() + 1);
                self.data.push_str(&value);
                self.data.push('\n');
                self.data_seen = true;
                self.check_size()?;
            }
            b"event" => self.event = Some(value.into_owned()),
            b"id" if !value.contains('\0') => self.id = Some(value.into_owned()),
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Digits beyond u64 are a retry no client could wait for: ignored.
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends the event being read. Events with neither data, event type nor id
    /// (keep-alives) are not delivered.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let mut data = std::mem::take(&mut self.data);
        if data.ends_with('\n') {
            data.pop();
        }
        let event = self.event.take();
        let id = self.id.take();
        let retry = self.retry.take();
        if std::mem::take(&mut self.data_seen) || event.is_some() || id.is_some() {
            out.push(SseEvent {
                event,
                data,
                id,
                retry,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, TooLarge> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn a_crlf_split_between_reads_is_one_line_end() {
        let evs = all(&[b"data: a\r", b"\n\r", b"\ndata: b\r\r"]).expect("events");
        let data: Vec<_> = evs.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["a", "b"]);
    }

    #[test]
    fn a_bom_split_between_reads_is_dropped_once() {
        let evs = all(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\n"]).expect("events");
        assert_eq!(evs[0].data, "a");
        // Only the stream's first BOM is dropped; later it is part of the name.
        let evs = all(&[b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"]).expect("events");
        assert_eq!(evs.len(), 1);
        // Short streams that merely start like a BOM keep their bytes.
        let evs = all(&[b"d", b"ata: x\n\n"]).expect("events");
        assert_eq!(evs[0].data, "x");
    }

    #[test]
    fn a_nul_in_an_id_is_ignored_and_huge_retry_too() {
        let evs = all(&[b"id: 1\nid: a\0b\nretry: 99999999999999999999999\ndata: x\n\n"])
            .expect("events");
        assert_eq!(evs[0].id.as_deref(), Some("1"));
        assert_eq!(evs[0].retry, None);
    }

    #[test]
    fn events_and_lines_over_the_limit_are_refused() {
        let mut p = SseParser::new(16);
        let mut out = Vec::new();
        assert!(p.feed(b"data: 0123456789\n", &mut out).is_ok());
        assert_eq!(
            p.feed(b"data: 0123456789\n", &mut out),
            Err(TooLarge { limit: 16 })
        );
        let mut p = SseParser::new(16);
        assert!(p.feed(b"data: 01234567890123456789", &mut out).is_err());
        // Small events one after the other never add up.
        let mut p = SseParser::new(16);
        for _ in 0..100 {
            p.feed(b"data: 0123456789\n\n", &mut out).expect("small");
        }
    }
}
