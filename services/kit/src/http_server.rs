//! The services' HTTP servers (the public broadcast site, the arbiters' dashboard) and the
//! limits that keep one script from exhausting them: a cap on open connections, a smaller one
//! per client address (both answered `503`, or closed under TLS), and timeouts on requests that
//! never come.

use std::{
    collections::HashMap,
    io,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use anyhow::Context as _;
use axum_server::accept::Accept;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use futures::future::BoxFuture;
use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf},
    net::TcpStream,
    sync::{OwnedSemaphorePermit, Semaphore},
};

/// What a connection beyond the cap is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\
retry-after: 5\r\nconnection: close\r\ncontent-length: 33\r\n\r\ntoo many connections, try again\r\n";

/// How long a refused connection may take to be told so and to close.
const REFUSAL_TIME: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct Limits {
    /// Open connections at once, live ones included.
    pub max_connections: usize,
    /// Open connections at once from one address, but for `unlimited_addresses`.
    pub max_per_address: usize,
    /// Addresses the per-address cap does not apply to: a reverse proxy or CDN in front, whose
    /// connections carry many people's requests.
    pub unlimited_addresses: Vec<IpAddr>,
    /// How long a client may take to send a request's headers, the first or the next on a
    /// kept-alive connection; then the connection is closed.
    pub header_timeout: Duration,
}

/// Admits a connection while fewer than the caps are open; its places go with the connection
/// and are given back when it closes.
#[derive(Clone)]
struct CappedAcceptor {
    open: Arc<Semaphore>,
    per_address: Arc<PerAddress>,
    /// Served over TLS: a refusal is a close (a plain-text answer would be noise to the client).
    tls: bool,
}

/// Open connections by client address.
struct PerAddress {
    max: usize,
    unlimited: Vec<IpAddr>,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerAddress {
    /// A place for a connection from `ip`, or `None` when the address has its fill.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<AddressPlace> {
        // Canonical: an IPv6 listener sees IPv4 clients as `::ffff:a.b.c.d`.
        let ip = ip.to_canonical();
        if self.unlimited.iter().any(|u| u.to_canonical() == ip) {
            return Some(AddressPlace {
                ip: None,
                of: self.clone(),
            });
        }
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(ip).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(AddressPlace {
            ip: Some(ip),
            of: self.clone(),
        })
    }
}

/// A connection's place among its address's; given back on drop.
struct AddressPlace {
    /// `None` for an unlimited address.
    ip: Option<IpAddr>,
    of: Arc<PerAddress>,
}

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let Some(ip) = self.ip else { return };
        let mut open = self.of.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&ip);
            }
        }
    }
}

/// A connection holding its places under the caps.
pub struct Admitted<S> {
    stream: S,
    _place: OwnedSemaphorePermit,
    _address_place: AddressPlace,
}

impl<Service> Accept<TcpStream, Service> for CappedAcceptor
where
    Service: Send + 'static,
{
    type Stream = Admitted<TcpStream>;
    type Service = Service;
    type Future = BoxFuture<'static, io::Result<(Admitted<TcpStream>, Service)>>;

    fn accept(&self, mut stream: TcpStream, service: Service) -> Self::Future {
        let open = self.open.clone();
        let per_address = self.per_address.clone();
        let tls = self.tls;
        Box::pin(async move {
            let address_place = stream
                .peer_addr()
                .ok()
                .map(|peer| per_address.admit(peer.ip()));
            let places = match (open.try_acquire_owned(), address_place) {
                (Ok(place), Some(Some(address_place))) => Some((place, address_place)),
                _ => None,
            };
            match places {
                Some((place, address_place)) => Ok((
                    Admitted {
                        stream,
                        _place: place,
                        _address_place: address_place,
                    },
                    service,
                )),
                None if tls => Err(io::Error::other("connection refused: too many open")),
                None => {
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

/// Serves `router` on `listener` within `limits`, over TLS when `tls` is given, until `handle`
/// is told to shut down. Handlers see the client's address (`ConnectInfo<SocketAddr>`).
pub async fn serve(
    listener: std::net::TcpListener,
    router: axum::Router,
    limits: Limits,
    tls: Option<RustlsConfig>,
    handle: axum_server::Handle<SocketAddr>,
) -> anyhow::Result<()> {
    let capped = CappedAcceptor {
        open: Arc::new(Semaphore::new(limits.max_connections)),
        per_address: Arc::new(PerAddress {
            max: limits.max_per_address,
            unlimited: limits.unlimited_addresses.clone(),
            open: Mutex::new(HashMap::new()),
        }),
        tls: tls.is_some(),
    };
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    let server = axum_server::from_tcp(listener).context("serving HTTP")?;
    match tls {
        Some(config) => within(
            server.acceptor(RustlsAcceptor::new(config).acceptor(capped)),
            &limits,
            handle,
        )
        .serve(service)
        .await
        .context("HTTPS server failed"),
        None => within(server.acceptor(capped), &limits, handle)
            .serve(service)
            .await
            .context("HTTP server failed"),
    }
}

/// `server` with the timeouts of `limits`. An HTTP/1 connection has `header_timeout` for each
/// request's headers; an HTTP/2 one (h2c, or h2 under TLS) only for its first request, then
/// it is held to the caps and to answering pings, as hyper has no idle timeout for HTTP/2.
fn within<Acceptor>(
    server: axum_server::Server<SocketAddr, Acceptor>,
    limits: &Limits,
    handle: axum_server::Handle<SocketAddr>,
) -> axum_server::Server<SocketAddr, Acceptor> {
    let mut server = server
        .first_request_timeout(limits.header_timeout)
        .handle(handle);
    let builder = server.http_builder();
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive_interval(limits.header_timeout)
        .keep_alive_timeout(limits.header_timeout);
    server
}
