//! The accept loop of `taskwire serve`: hyper-util's auto connection builder
//! (HTTP/1.1, and HTTP/2 with prior knowledge — h2c, what gRPC clients speak — on
//! one port) with a tokio timer, configured for hostile clients.
//!
//! Every resource a client can hold before it is even authenticated has a bound
//! ([`ListenerConfig`]): connections (accepting pauses at the cap), the time to the
//! first request, the time to read a request head, idle time, HTTP/2 streams,
//! decoded header bytes, reset streams (the Rapid Reset attack and the variant a
//! server provokes), bytes buffered per stream for a slow reader, a request body
//! that stops making progress, and a peer that stops reading its socket. A client
//! over a limit loses its own connection (HTTP/2: GOAWAY, ENHANCE_YOUR_CALM where
//! hyper's `h2` sends it); the others do not notice.
//!
//! On shutdown the loop stops accepting, asks every connection to finish
//! gracefully (HTTP/1.1: after the request in progress; HTTP/2: GOAWAY, then the
//! open streams finish) and returns when all are gone.

mod conn;
mod graceful;
mod incoming;
mod limits;

pub(crate) use incoming::serve;
pub use limits::{BodyTimeout, ListenerConfig};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use super::conn::*;
    use super::limits::*;

    fn config() -> ListenerConfig {
        ListenerConfig {
            handshake_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(3),
            send_timeout: Duration::from_secs(4),
            ..ListenerConfig::default()
        }
    }

    #[test]
    fn idle_time_accumulates_only_without_requests() {
        let mut w = Watchdog::new(&config());
        let s = ConnState::new();
        s.started.store(1, Ordering::Relaxed);
        let step = Duration::from_secs(1);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        // A request started meanwhile resets the idle time.
        s.started.store(2, Ordering::Relaxed);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Idle);
        // A request in flight (a stream being answered) is not idle.
        let mut w = Watchdog::new(&config());
        s.in_flight.store(1, Ordering::Relaxed);
        for _ in 0..10 {
            assert_eq!(w.look(&s, step), Verdict::Keep);
        }
    }

    #[test]
    fn a_stalled_writer_is_dropped_after_the_send_timeout() {
        let mut w = Watchdog::new(&config());
        let s = ConnState::new();
        s.started.store(1, Ordering::Relaxed);
        s.in_flight.store(1, Ordering::Relaxed);
        // Blocked since "5 s before now" (the clock starts at acceptance, so
        // pretend with an offset).
        let s = ConnState {
            accepted: Instant::now() - Duration::from_secs(10),
            ..s
        };
        s.write_blocked_since.store(5_000 + 1, Ordering::Relaxed);
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Stalled);
        s.write_blocked_since.store(8_000 + 1, Ordering::Relaxed);
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Keep);
    }

    #[test]
    fn no_request_within_the_handshake_timeout_is_dropped() {
        let mut w = Watchdog::new(&config());
        let s = ConnState::new();
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Keep);
        let s = ConnState {
            accepted: Instant::now() - Duration::from_secs(3),
            ..ConnState::new()
        };
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Handshake);
    }

    fn frame(kind: u8, flags: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![
            (payload >> 16) as u8,
            (payload >> 8) as u8,
            payload as u8,
            kind,
            flags,
            0,
            0,
            0,
            0,
        ];
        f.resize(9 + payload, 0xAA);
        f
    }

    #[test]
    fn the_frame_budget_counts_pings_and_settings_only() {
        let now = Instant::now();
        let mut b = FrameBudget::new(10);
        let mut bytes = PREFACE.to_vec();
        // 20 PINGs (the burst), acknowledgements and other frames free.
        for _ in 0..20 {
            bytes.extend(frame(FRAME_PING, 0, 8));
            bytes.extend(frame(FRAME_PING, FLAG_ACK, 8));
            bytes.extend(frame(0x0, 0, 1000)); // DATA
        }
        // Fed in odd-sized pieces, as reads come.
        for chunk in bytes.chunks(7) {
            assert!(b.scan(chunk, now));
        }
        // The next one is over the budget...
        assert!(!b.scan(&frame(FRAME_SETTINGS, 0, 6), now));
        // ...until time refills it.
        assert!(b.scan(&frame(FRAME_SETTINGS, 0, 6), now + Duration::from_secs(1)));
    }

    #[test]
    fn the_frame_budget_ignores_http1() {
        let mut b = FrameBudget::new(1);
        assert!(b.scan(b"GET / HTTP/1.1\r\n", Instant::now()));
        assert!(!b.watching());
    }

    #[test]
    fn the_check_interval_follows_the_shortest_timeout() {
        assert_eq!(config().check_interval(), Duration::from_millis(500));
        assert_eq!(
            ListenerConfig::default().check_interval(),
            Duration::from_secs(1)
        );
        let tiny = ListenerConfig {
            handshake_timeout: Duration::from_millis(10),
            ..ListenerConfig::default()
        };
        assert_eq!(tiny.check_interval(), Duration::from_millis(50));
    }
}
