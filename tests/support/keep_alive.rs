//! Many reviews to one `jobgate serve` over one kept-alive HTTPS/1.1 connection (verifying the
//! dev CA), for tests that send thousands: a curl process per request would cost more than the
//! reviews.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use super::serve::Jobgate;

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// An HTTPS/1.1 client of one `jobgate serve` that keeps its connection, reconnecting when the
/// server closes it.
pub struct KeepAliveClient {
    config: Arc<rustls::ClientConfig>,
    port: u16,
    stream: Option<BufReader<Tls>>,
}

impl KeepAliveClient {
    /// A client of `jg`, trusting its dev CA; it connects on first use.
    pub fn new(jg: &Jobgate) -> KeepAliveClient {
        KeepAliveClient {
            config: Arc::new(super::serve::tls_client_config(jg, b"http/1.1")),
            port: jg.port,
            stream: None,
        }
    }

    fn connect(&self) -> std::io::Result<BufReader<Tls>> {
        let conn = rustls::ClientConnection::new(
            self.config.clone(),
            "localhost".try_into().expect("server name"),
        )
        .map_err(std::io::Error::other)?;
        let sock = TcpStream::connect(("127.0.0.1", self.port))?;
        sock.set_read_timeout(Some(Duration::from_secs(60)))?;
        sock.set_nodelay(true)?;
        Ok(BufReader::new(rustls::StreamOwned::new(conn, sock)))
    }

    /// POSTs `body` as JSON to `path`; the HTTP status and the response body. A connection the
    /// server closed is opened again once.
    pub fn post(&mut self, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let mut last = None;
        for _ in 0..2 {
            if self.stream.is_none() {
                match self.connect() {
                    Ok(s) => self.stream = Some(s),
                    Err(e) => {
                        last = Some(e);
                        continue;
                    }
                }
            }
            let stream = self.stream.as_mut().expect("connected");
            match exchange(stream, path, body) {
                Ok((status, reply, keep)) => {
                    if !keep {
                        self.stream = None;
                    }
                    return Ok((status, reply));
                }
                Err(e) => {
                    self.stream = None;
                    last = Some(e);
                }
            }
        }
        Err(format!("POST {path} to jobgate failed: {last:?}"))
    }
}

/// One request and its response: status, body, whether the connection stays open.
fn exchange(
    stream: &mut BufReader<Tls>,
    path: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>, bool)> {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let tls = stream.get_mut();
    tls.write_all(head.as_bytes())?;
    tls.write_all(body)?;
    tls.flush()?;
    let mut status_line = String::new();
    if stream.read_line(&mut status_line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed before a response",
        ));
    }
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let (mut length, mut chunked, mut keep) = (None, false, true);
    loop {
        let mut line = String::new();
        stream.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse::<usize>().ok(),
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            "connection" => keep = !value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    let mut reply = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            stream.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).map_err(std::io::Error::other)?;
            let mut chunk = vec![0; n + 2];
            stream.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        reply.resize(n, 0);
        stream.read_exact(&mut reply)?;
    } else {
        stream.read_to_end(&mut reply)?;
        keep = false;
    }
    Ok((status, reply, keep))
}
