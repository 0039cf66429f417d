//! A plain-HTTP stand-in for kube-apiserver and a kubeconfig that points at it, for the commands
//! that read a cluster (`audit`, `status`).

use std::path::PathBuf;

/// A plain-HTTP stand-in for kube-apiserver: answers each request with `answer(method, path)`
/// (status code and JSON body), one request per connection, and records `METHOD path` of each.
/// Returns its kubeconfig (and the directory holding it) and the record.
#[allow(clippy::type_complexity)]
pub fn fake_api_server(
    answer: impl Fn(&str, &str) -> (u16, String) + Send + 'static,
) -> (
    tempfile::TempDir,
    PathBuf,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" => break,
                    Ok(_) => {
                        if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let mut words = request_line.split_whitespace();
            let method = words.next().unwrap_or("GET");
            let path = words.next().unwrap_or("/");
            record
                .lock()
                .expect("record")
                .push(format!("{method} {path}"));
            let (code, body) = answer(method, path);
            let _ = write!(
                stream,
                "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let (dir, kubeconfig) = kubeconfig_for(port);
    (dir, kubeconfig, seen)
}

/// A kubeconfig (in a temporary directory) whose current context is `http://127.0.0.1:<port>`.
pub fn kubeconfig_for(port: u16) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: local\n  context:\n    cluster: local\n    user: alice\n\
             current-context: local\nusers:\n- name: alice\n  user: {{}}\n"
        ),
    )
    .expect("kubeconfig");
    (dir, kubeconfig)
}
