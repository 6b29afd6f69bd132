//! Fuzz-style property tests of the parsers this crate has: SSE frame splitting,
//! protobuf frame splitting, `Last-Event-ID` positions and `RunAgentInput`. Random
//! input never panics; valid encodings round-trip.

use proptest::prelude::*;
use taskwire_agui::proto::{decode_frames, encode_frame};
use taskwire_agui::render::Pos;
use taskwire_agui::sse;
use taskwire_agui::wire::{Event, EventBody, RunAgentInput};

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_frames(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        let _ = sse::decode(&text);
        let _ = Pos::parse(&text);
        let _ = serde_json::from_slice::<RunAgentInput>(&bytes);
        let _ = serde_json::from_slice::<Event>(&bytes);
    }

    #[test]
    fn frames_round_trip(ids in proptest::collection::vec("[a-z0-9\\n\"\\\\]{0,12}", 1..8)) {
        let events: Vec<Event> = ids
            .iter()
            .map(|s| Event::at(EventBody::TextMessageContent { message_id: s.clone(), delta: format!("x{s}") }, 1))
            .collect();
        let mut body = Vec::new();
        let mut text = String::new();
        for (i, e) in events.iter().enumerate() {
            body.extend(encode_frame(e));
            text.push_str(&sse::encode(Some(&format!("{i}.0")), e).unwrap());
        }
        let decoded = decode_frames(&body).unwrap();
        prop_assert_eq!(decoded.len(), events.len());
        let back = sse::decode(&text);
        prop_assert_eq!(back.len(), events.len());
        for ((id, data), e) in back.iter().zip(&events) {
            prop_assert!(id.is_some());
            let got: Event = serde_json::from_str(data).unwrap();
            prop_assert_eq!(&got, e);
        }
        // A truncated protobuf body is an error, or (cut at a frame boundary)
        // fewer frames; never a panic.
        for cut in 1..body.len().min(64) {
            if let Ok(v) = decode_frames(&body[..body.len() - cut]) {
                prop_assert!(v.len() < events.len());
            }
        }
    }
}
