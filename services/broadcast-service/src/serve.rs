//! The public HTTP server and the limits that keep one script from exhausting it: a cap on open
//! connections (answered `503` beyond it) and timeouts on requests that never come.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use anyhow::Context as _;
use axum_server::accept::Accept;
use futures::future::BoxFuture;
use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf},
    sync::{OwnedSemaphorePermit, Semaphore},
};

/// What a connection beyond the cap is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\
retry-after: 5\r\nconnection: close\r\ncontent-length: 33\r\n\r\ntoo many connections, try again\r\n";

/// How long a refused connection may take to be told so and to close.
const REFUSAL_TIME: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections at once, live ones included.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, the first or the next on a
    /// kept-alive connection; then the connection is closed.
    pub header_timeout: Duration,
}

/// Admits a connection while fewer than the cap are open; the permit goes with the connection
/// and is given back when it closes.
#[derive(Clone)]
struct CappedAcceptor {
    open: Arc<Semaphore>,
}

/// A connection holding its place under the cap.
struct Admitted<S> {
    stream: S,
    _place: OwnedSemaphorePermit,
}

impl<S, Service> Accept<S, Service> for CappedAcceptor
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    Service: Send + 'static,
{
    type Stream = Admitted<S>;
    type Service = Service;
    type Future = BoxFuture<'static, io::Result<(Admitted<S>, Service)>>;

    fn accept(&self, mut stream: S, service: Service) -> Self::Future {
        let open = self.open.clone();
        Box::pin(async move {
            match open.try_acquire_owned() {
                Ok(place) => Ok((
                    Admitted {
                        stream,
                        _place: place,
                    },
                    service,
                )),
                Err(_) => {
                    // Best effort, within `REFUSAL_TIME`: told after its request's head, then what
                    // else the client sends is read and dropped until it closes (closing on
                    // unread bytes resets the connection before the client reads the answer).
                    let _ = tokio::time::timeout(REFUSAL_TIME, async {
                        // The request's head first: HTTP clients take an answer that comes
                        // before their request for a broken connection.
                        let mut head = Vec::new();
                        let mut buffer = [0u8; 1024];
                        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16_384 {
                            match stream.read(&mut buffer).await? {
                                0 => break,
                                n => head.extend_from_slice(&buffer[..n]),
                            }
                        }
                        stream.write_all(BUSY).await?;
                        stream.shutdown().await?;
                        while stream.read(&mut buffer).await? > 0 {}
                        io::Result::Ok(())
                    })
                    .await;
                    Err(io::Error::other("connection refused: too many open"))
                }
            }
        })
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Admitted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Admitted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Serves `router` on `listener` within `limits` until `handle` is told to shut down.
pub async fn serve(
    listener: std::net::TcpListener,
    router: axum::Router,
    limits: Limits,
    handle: axum_server::Handle<SocketAddr>,
) -> anyhow::Result<()> {
    let mut server = axum_server::from_tcp(listener)
        .context("serving HTTP")?
        .acceptor(CappedAcceptor {
            open: Arc::new(Semaphore::new(limits.max_connections)),
        })
        .first_request_timeout(limits.header_timeout)
        .handle(handle);
    server
        .http_builder()
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    server
        .serve(router.into_make_service())
        .await
        .context("HTTP server failed")
}
