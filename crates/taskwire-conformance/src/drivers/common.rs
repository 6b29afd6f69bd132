//! What the drivers share: reading a stream frame by frame against a time limit
//! and a frame budget, and collecting the texts of a JSON list.

use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use serde_json::Value;
use taskwire_client::ClientError;

use crate::driver::StreamObs;

/// What [`Frames::next`] read.
pub(crate) enum Frame<T> {
    /// A frame.
    Item(T),
    /// The stream ended by itself.
    Ended,
    /// The time ran out, or the frame budget was spent.
    Cut,
}

/// Reads a stream until a deadline, and at most a number of frames.
pub(crate) struct Frames {
    deadline: Instant,
    max: Option<usize>,
    read: usize,
}

impl Frames {
    /// A reader whose time runs out `limit` from now, that stops after `max` frames.
    pub(crate) fn new(limit: Duration, max: Option<usize>) -> Frames {
        Frames {
            deadline: Instant::now() + limit,
            max,
            read: 0,
        }
    }

    /// [`Frames::new`] with the limit in milliseconds.
    pub(crate) fn within_ms(limit_ms: u64, max: Option<usize>) -> Frames {
        Frames::new(Duration::from_millis(limit_ms), max)
    }

    /// The next frame of `s`; an error frame is returned as the error.
    pub(crate) async fn next<S, T>(&mut self, s: &mut S) -> Result<Frame<T>, ClientError>
    where
        S: Stream<Item = Result<T, ClientError>> + Unpin,
    {
        if self.max.is_some_and(|m| self.read >= m) {
            return Ok(Frame::Cut);
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.next()).await {
            Err(_) => Ok(Frame::Cut),
            Ok(None) => Ok(Frame::Ended),
            Ok(Some(Err(e))) => Err(e),
            Ok(Some(Ok(t))) => {
                self.read += 1;
                Ok(Frame::Item(t))
            }
        }
    }

    /// The next frame of `s`, or `None` where reading stops; a stream that ended
    /// by itself marks `obs` ended.
    pub(crate) async fn next_into<S, T>(
        &mut self,
        s: &mut S,
        obs: &mut StreamObs,
    ) -> Result<Option<T>, ClientError>
    where
        S: Stream<Item = Result<T, ClientError>> + Unpin,
    {
        match self.next(s).await? {
            Frame::Item(t) => Ok(Some(t)),
            Frame::Ended => {
                obs.ended = true;
                Ok(None)
            }
            Frame::Cut => Ok(None),
        }
    }
}

/// The string `field` of every object of the JSON list `list` that has one
/// (nothing where `list` is not a list).
pub(crate) fn field_texts(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c[field].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_texts_skip_objects_without_the_field() {
        let v = json!([{"text": "a"}, {"data": 1}, {"text": "b"}]);
        assert_eq!(field_texts(&v, "text"), vec!["a", "b"]);
        assert!(field_texts(&json!({"text": "a"}), "text").is_empty());
    }

    #[tokio::test]
    async fn frames_stop_at_the_budget_and_at_the_end() {
        let items: Vec<Result<u32, ClientError>> = vec![Ok(1), Ok(2), Ok(3)];
        let mut s = futures::stream::iter(items);
        let mut f = Frames::within_ms(5_000, Some(2));
        let mut obs = StreamObs::default();
        assert_eq!(f.next_into(&mut s, &mut obs).await.ok().flatten(), Some(1));
        assert_eq!(f.next_into(&mut s, &mut obs).await.ok().flatten(), Some(2));
        assert_eq!(f.next_into(&mut s, &mut obs).await.ok().flatten(), None);
        assert!(!obs.ended);
        let mut f = Frames::within_ms(5_000, None);
        assert_eq!(f.next_into(&mut s, &mut obs).await.ok().flatten(), Some(3));
        assert_eq!(f.next_into(&mut s, &mut obs).await.ok().flatten(), None);
        assert!(obs.ended);
    }
}
