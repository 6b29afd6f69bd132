//! Graceful close: a connection asked to finish its requests and close, or
//! dropped when it does not in time.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::conn::{ConnService, Watched};
use futures::task::AtomicWaker;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;

/// After a graceful close (GOAWAY) begins, how long open streams and a slow peer
/// get before the connection is dropped.
pub(crate) const GRACEFUL_CLOSE: Duration = Duration::from_secs(5);

/// What a connection's watchdog asks of it: nothing, a graceful close, or to be
/// dropped at once.
pub(crate) const ASK_NONE: u8 = 0;

pub(crate) const ASK_GRACEFUL: u8 = 1;

pub(crate) const ASK_DROP: u8 = 2;

/// The channel from a connection's watchdog task to the connection: a flag and
/// the connection task's waker. The connection looks at the flag once per poll
/// (one atomic load), so its hot path polls no timer.
#[derive(Default)]
pub(crate) struct Control {
    pub(crate) ask: AtomicU8,
    pub(crate) waker: AtomicWaker,
}

impl Control {
    pub(crate) fn ask(&self, what: u8) {
        self.ask.fetch_max(what, Ordering::AcqRel);
        self.waker.wake();
    }
}

/// The connection future under the watchdog's control.
pub(crate) struct Driven<C> {
    pub(crate) conn: Pin<Box<C>>,
    pub(crate) control: Arc<Control>,
    pub(crate) graceful_started: bool,
}

/// A connection future that can be asked to close gracefully.
pub(crate) trait GracefulConn: Future {
    fn start_graceful(self: Pin<&mut Self>);
}

impl GracefulConn for auto::Connection<'static, TokioIo<Watched>, ConnService, TokioExecutor> {
    fn start_graceful(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<C: GracefulConn> Future for Driven<C> {
    type Output = Option<C::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        this.control.waker.register(cx.waker());
        match this.control.ask.load(Ordering::Acquire) {
            ASK_NONE => {}
            ASK_GRACEFUL => {
                if !this.graceful_started {
                    this.graceful_started = true;
                    this.conn.as_mut().start_graceful();
                }
            }
            _ => return Poll::Ready(None),
        }
        this.conn.as_mut().poll(cx).map(Some)
    }
}
