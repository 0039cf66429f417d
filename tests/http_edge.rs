//! The webhook port's edge through the real binary (TLS, HTTP/1.1): every early or failed answer
//! reaches the client, and the gauges read 0 at rest afterwards, read off `/metrics` as
//! Prometheus would.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod serve;
}

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::serve::{Jobgate, curl, post_file, tls_client_config};

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn connect(jg: &Jobgate) -> Tls {
    let conn = rustls::ClientConnection::new(
        Arc::new(tls_client_config(jg, b"http/1.1")),
        "localhost".try_into().unwrap(),
    )
    .unwrap();
    let sock = TcpStream::connect(("127.0.0.1", jg.port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    rustls::StreamOwned::new(conn, sock)
}

/// Sends the head of a `/validate` POST declaring `len` bytes, then `sent` bytes of its body.
fn start_post(jg: &Jobgate, len: usize, sent: usize) -> Tls {
    let mut stream = connect(jg);
    let head = format!(
        "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&vec![b' '; sent]).unwrap();
    stream.flush().unwrap();
    stream
}

/// Reads one HTTP/1.1 response with a Content-Length; returns its status and body, or the error
/// that ended the read (a reset shows here).
fn read_response(stream: &mut impl Read) -> Result<(u16, String), String> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(0) => return Err(format!("closed after {} bytes", buf.len())),
            Ok(_) => buf.push(byte[0]),
            Err(e) => return Err(format!("{e} after {} bytes", buf.len())),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let status: u16 = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or(head.clone())?;
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or(head.clone())?;
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The value of a series on the admin port (its name and labels as exported).
fn metric(jg: &Jobgate, name: &str) -> i64 {
    let text = curl(&[&jg.admin_url("/metrics")]).body;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
}

const RESERVED: &str = "jobgate_admission_body_bytes_reserved";
const IN_FLIGHT: &str = "jobgate_admission_in_flight_requests";

fn assert_at_rest(jg: &Jobgate, after: &str) {
    assert_eq!(metric(jg, RESERVED), 0, "{RESERVED} after {after}");
    assert_eq!(metric(jg, IN_FLIGHT), 0, "{IN_FLIGHT} after {after}");
}

/// Waits (bounded) until the body-bytes gauge reads `want`; returns what it read last.
fn wait_for_reserved(jg: &Jobgate, want: impl Fn(i64) -> bool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = metric(jg, RESERVED);
        if want(got) || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A 2 MB body that stops arriving: 408 after `--body-timeout`, and its 2,000,896 reserved bytes
/// are given back (the gauge used to stay at that figure).
#[test]
fn a_body_past_the_body_timeout_gets_408_and_its_bytes_back() {
    let jg = Jobgate::start(&["--body-timeout", "1s"]);
    let mut stream = start_post(&jg, 2_000_000, 1000);
    assert_eq!(wait_for_reserved(&jg, |n| n > 0), 2_000_896);
    let (status, body) = read_response(&mut stream).unwrap();
    assert_eq!(status, 408, "{body}");
    assert!(
        body.contains("request body not received within 1s"),
        "{body}"
    );
    assert_at_rest(&jg, "a 408");
    // The rejection is timed from its headers, as an answered review is: one observation, past
    // the second the body was awaited.
    let count = r#"jobgate_admission_duration_seconds_count{endpoint="validate"}"#;
    let under_half_a_second =
        r#"jobgate_admission_duration_seconds_bucket{le="0.5",endpoint="validate"}"#;
    assert_eq!(metric(&jg, count), 1);
    assert_eq!(metric(&jg, under_half_a_second), 0);
}

/// An 8 MB body over HTTP/1.1: the 413 is decided from the Content-Length and must reach a
/// client that sends the whole body before reading (it used to arrive as a reset), and one that
/// asked `Expect: 100-continue` (curl does for large bodies) and so never sends it.
#[test]
fn an_8mb_body_gets_its_413_over_http1_not_a_reset() {
    let jg = Jobgate::start(&[]);
    let len = 8 * 1024 * 1024;
    for attempt in 0..5 {
        let mut stream = start_post(&jg, len, 0);
        let sent = stream
            .write_all(&vec![b' '; len])
            .and_then(|_| stream.flush());
        let answer = read_response(&mut stream);
        let (status, body) = answer
            .unwrap_or_else(|e| panic!("attempt {attempt}: no answer ({e}); sending: {sent:?}"));
        assert_eq!(status, 413, "attempt {attempt}: {body}");
        assert!(
            body.contains("request body exceeds 7340032 bytes"),
            "{body}"
        );
    }
    let big = jg.dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; len]).unwrap();
    let reply = post_file(&jg, "/validate", &big, "--http1.1");
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(reply.stderr.is_empty(), "{reply:?}");
    assert_at_rest(&jg, "413s");
}

/// With the smallest budget one 7 MB body fills it: while it trickles in, 2 MB bodies are
/// refused with 429 after `--body-budget-wait`; once it is answered every byte is free again
/// (the gauge used to stay at 7,000,064 after such a burst).
#[test]
fn a_burst_refused_with_429_leaves_no_bytes_reserved() {
    let jg = Jobgate::start(&[
        "--body-memory-budget",
        "1Mi",
        "--body-budget-wait",
        "100ms",
        "--body-timeout",
        "3s",
    ]);
    let mut holder = start_post(&jg, 7_000_000, 1000);
    assert_eq!(wait_for_reserved(&jg, |n| n > 0), 7_000_064);
    let refused: Vec<_> = (0..4)
        .map(|_| {
            let mut stream = start_post(&jg, 2_000_000, 2_000_000);
            read_response(&mut stream).map(|(status, _)| status)
        })
        .collect();
    assert!(refused.iter().all(|r| r == &Ok(429)), "{refused:?}");
    assert_eq!(metric(&jg, RESERVED), 7_000_064);
    let (status, _) = read_response(&mut holder).unwrap();
    assert_eq!(status, 408);
    assert_at_rest(&jg, "a 429 burst");
}

/// A client that goes away in the middle of its body: the request is dropped mid-read and its
/// reservation with it.
#[test]
fn a_client_that_leaves_mid_body_gives_its_bytes_back() {
    let jg = Jobgate::start(&[]);
    let stream = start_post(&jg, 2_000_000, 64 * 1024);
    assert_eq!(wait_for_reserved(&jg, |n| n > 0), 2_000_896);
    drop(stream);
    assert_eq!(wait_for_reserved(&jg, |n| n == 0), 0);
    assert_at_rest(&jg, "a client left mid-body");
}
