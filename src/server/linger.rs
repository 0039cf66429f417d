//! Closing a connection without destroying the last answer sent on it.
//!
//! hyper closes an HTTP/1.1 connection whose request body it did not read (an early 413, a 408,
//! a body longer than `drain` reads). A socket closed with unread input, or receiving more input
//! after it was closed, makes the kernel send a reset, and a reset can discard the answer in the
//! client's receive buffer before the client read it: the client sees `Connection reset by peer`
//! instead of the 413. Go's net/http avoids this in `(*conn).closeWriteAndWait`: send a FIN, then
//! keep the socket open for a while (`rstAvoidanceDelay`, 500 ms) before closing it.
//! [`LingerAcceptor`] does the same for every connection of the webhook port: when hyper drops
//! the connection, its socket is half-closed and what the client still sends is read and
//! discarded until the client closes its side or `LINGER` has passed.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum_server::accept::Accept;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// How long a closed connection keeps reading and discarding what its client still sends.
const LINGER: Duration = Duration::from_millis(500);

/// Sets `TCP_NODELAY` (as axum-server's `NoDelayAcceptor`) and wraps the socket in [`Lingering`].
#[derive(Clone, Copy, Debug, Default)]
pub struct LingerAcceptor;

impl<S> Accept<TcpStream, S> for LingerAcceptor {
    type Stream = Lingering;
    type Service = S;
    type Future = std::future::Ready<io::Result<(Lingering, S)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        std::future::ready(
            stream
                .set_nodelay(true)
                .map(|()| (Lingering(Some(stream)), service)),
        )
    }
}

/// A TCP stream that lingers when dropped.
#[derive(Debug)]
pub struct Lingering(Option<TcpStream>);

impl Lingering {
    fn stream(&mut self) -> io::Result<Pin<&mut TcpStream>> {
        match self.0.as_mut() {
            Some(s) => Ok(Pin::new(s)),
            None => Err(io::ErrorKind::NotConnected.into()),
        }
    }
}

impl AsyncRead for Lingering {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut().stream() {
            Ok(s) => s.poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().stream() {
            Ok(s) => s.poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().stream() {
            Ok(s) => s.poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().stream() {
            Ok(s) => s.poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().stream() {
            Ok(s) => s.poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let Some(stream) = self.0.take() else { return };
        // Outside a runtime (process exit) the socket just closes.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(linger(stream));
        }
    }
}

async fn linger(mut stream: TcpStream) {
    // The FIN tells the client the answer is complete; hyper has usually sent it already.
    let _ = stream.shutdown().await;
    let discard = async {
        let mut buf = [0u8; 4096];
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    let _ = tokio::time::timeout(LINGER, discard).await;
}
