//! SSE framing: one event per frame, `id:` then `data: <json>` and a blank line.
//!
//! Written by hand because it is four lines: the JSON of an event never contains
//! a raw newline (serde_json escapes them), so a frame is always one `data:` line.

use crate::render::Frame;
use crate::wire::Event;
use crate::AguiError;

/// The SSE media type.
pub const MEDIA_TYPE: &str = "text/event-stream";

/// Encodes one frame, with its position as the `id:` when given.
pub fn encode(id: Option<&str>, event: &Event) -> Result<String, AguiError> {
    let json = serde_json::to_string(event)?;
    Ok(match id {
        Some(id) => format!("id: {id}\ndata: {json}\n\n"),
        None => format!("data: {json}\n\n"),
    })
}

/// Encodes a run frame with its position as the id.
pub fn encode_frame(f: &Frame) -> Result<String, AguiError> {
    encode(Some(&f.pos.to_string()), &f.event)
}

/// Splits an SSE body into `(id, data)` pairs (test and tooling helper; accepts
/// only what [`encode`] writes, plus comments and `event:` lines, which it skips).
pub fn decode(body: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for block in body.split("\n\n") {
        let mut id = None;
        let mut data: Option<String> = None;
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim_start().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                let v = v.strip_prefix(' ').unwrap_or(v);
                match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(v);
                    }
                    None => data = Some(v.to_string()),
                }
            }
        }
        if let Some(d) = data {
            out.push((id, d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::EventBody;

    #[test]
    fn frames_round_trip() {
        let e = Event::new(EventBody::TextMessageContent {
            message_id: "m".into(),
            delta: "two\nlines".into(),
        });
        let s = encode(Some("3.1"), &e).unwrap();
        assert_eq!(
            s.matches('\n').count(),
            3,
            "one id line, one data line, a blank line"
        );
        let d = decode(&s);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0.as_deref(), Some("3.1"));
        let back: Event = serde_json::from_str(&d[0].1).unwrap();
        assert_eq!(back, e);
    }
}
