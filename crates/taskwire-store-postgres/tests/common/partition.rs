//! A TCP proxy to the test database that a test switches between forwarding,
//! a silent partition and resetting connections: the network between one node
//! and PostgreSQL as a partition shows it. Listens on 127.0.0.1 (an ephemeral
//! port) and connects only to the database the test names.
//!
//! - [`Mode::Forward`]: bytes are copied both ways.
//! - [`Mode::Silent`]: nothing is forwarded and nothing is closed: connections
//!   stay open, bytes sent either way wait (new connections are accepted and
//!   never answered), as when packets are dropped.
//! - [`Mode::Reset`]: every connection through the proxy is reset (RST), and so
//!   is every new one, as when the peer's state is gone.
//!
//! Used by the store's tests and, through `#[path]`, by the multi-node tests of
//! the `taskwire` crate.

#![allow(dead_code, reason = "each test binary uses part of this module")]

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Copy bytes both ways.
    Forward,
    /// Forward nothing, close nothing.
    Silent,
    /// Reset every connection, old and new.
    Reset,
}

/// The proxy; dropping it stops it (and drops every connection).
pub(crate) struct PartitionProxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PartitionProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PartitionProxy {
    /// Listens on 127.0.0.1 and forwards to `target` (`host:port`).
    pub(crate) async fn start(target: &str) -> PartitionProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().expect("bound address");
        let (mode, rx) = watch::channel(Mode::Forward);
        let target = target.to_string();
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    return;
                };
                let _ = inbound.set_nodelay(true);
                conns.spawn(connection(inbound, target.clone(), rx.clone()));
                while conns.try_join_next().is_some() {}
            }
        });
        PartitionProxy { addr, mode, task }
    }

    /// The address to connect to.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Switches what the proxy does, for old and new connections.
    pub(crate) fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }
}

/// Closes `s` with a reset (SO_LINGER 0: the close sends RST and does not block).
#[expect(deprecated, reason = "a zero linger resets at once; it does not block")]
fn reset(s: TcpStream) {
    let _ = s.set_linger(Some(Duration::ZERO));
    drop(s);
}

/// Waits until the mode is not silent; returns it.
async fn not_silent(mode: &mut watch::Receiver<Mode>) -> Mode {
    loop {
        let m = *mode.borrow_and_update();
        if m != Mode::Silent {
            return m;
        }
        if mode.changed().await.is_err() {
            return Mode::Reset;
        }
    }
}

async fn connection(inbound: TcpStream, target: String, mut mode: watch::Receiver<Mode>) {
    // A connection that arrives during a partition is accepted and not answered.
    if not_silent(&mut mode).await == Mode::Reset {
        return reset(inbound);
    }
    let Ok(outbound) = TcpStream::connect(&target).await else {
        return reset(inbound);
    };
    let _ = outbound.set_nodelay(true);
    let (mut a, mut b) = (inbound, outbound);
    let mut from_a = vec![0u8; 16 * 1024];
    let mut from_b = vec![0u8; 16 * 1024];
    loop {
        if not_silent(&mut mode).await == Mode::Reset {
            reset(a);
            reset(b);
            return;
        }
        // Read from either side, unless the mode changes first.
        let (data, to_b) = tokio::select! {
            r = a.read(&mut from_a) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => (from_a[..n].to_vec(), true),
            },
            r = b.read(&mut from_b) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => (from_b[..n].to_vec(), false),
            },
            _ = mode.changed() => continue,
        };
        // Bytes read just as a partition began wait for it to end.
        if not_silent(&mut mode).await == Mode::Reset {
            reset(a);
            reset(b);
            return;
        }
        let written = if to_b {
            b.write_all(&data).await
        } else {
            a.write_all(&data).await
        };
        if written.is_err() {
            break;
        }
    }
    let _ = a.shutdown().await;
    let _ = b.shutdown().await;
}
