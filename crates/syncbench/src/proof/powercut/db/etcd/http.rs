//! Just enough HTTP/1.1 and base64 for etcd's v3 JSON gateway (grpc-gateway): one request per
//! connection (`Connection: close`), a body with Content-Length or chunked, no TLS. etcd runs on
//! 127.0.0.1 for the cell only, so std's TcpStream is all it takes (no async runtime, no HTTP crate).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, bail};

/// How long one request may wait: a txn waits for etcd's WAL fsync, seconds on a slow lab disk.
const REQUEST_LIMIT: Duration = Duration::from_secs(120);

/// `method path` with `body` (JSON) to the server at `addr`; the answer's JSON when the status is 200,
/// else an `Err` with the status and the server's words.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to etcd at {addr}"))?;
    stream.set_read_timeout(Some(REQUEST_LIMIT))?;
    stream.set_write_timeout(Some(REQUEST_LIMIT))?;
    let body = body.to_string();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).context("sending to etcd")?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).with_context(|| format!("reading etcd's answer to {path}"))?;
    let (status, body) = parse_response(&raw)?;
    if status != 200 {
        bail!("etcd answered {path} with HTTP {status}: {}", String::from_utf8_lossy(&body).trim());
    }
    serde_json::from_slice(&body).with_context(|| format!("etcd's answer to {path} is not JSON"))
}

/// The status code and the body (de-chunked) of a whole HTTP/1.1 response.
pub fn parse_response(raw: &[u8]) -> anyhow::Result<(u16, Vec<u8>)> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").context("etcd's answer has no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("etcd's answer starts with {status_line:?}"))?;
    let header = |name: &str| {
        lines.clone().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        return Ok((status, dechunk(body)?));
    }
    match header("content-length") {
        Some(len) => {
            let len: usize = len.parse().with_context(|| format!("Content-Length {len:?}"))?;
            let body = body.get(..len).context("etcd's answer ended before its Content-Length")?;
            Ok((status, body.to_vec()))
        }
        None => Ok((status, body.to_vec())),
    }
}

/// The body of a chunked transfer: `SIZE\r\nDATA\r\n` … `0\r\n\r\n`.
pub fn dechunk(mut body: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = body.windows(2).position(|w| w == b"\r\n").context("a chunk without its size line")?;
        let size_text = String::from_utf8_lossy(&body[..eol]);
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16).with_context(|| format!("chunk size {size_hex:?}"))?;
        body = &body[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = body.get(..size).context("the answer ended inside a chunk")?;
        out.extend_from_slice(chunk);
        body = body.get(size + 2..).context("the answer ended after a chunk")?;
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (how the gateway carries keys and values).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The bytes of standard base64 text (padding optional).
pub fn base64_decode(text: &str) -> anyhow::Result<Vec<u8>> {
    let digits: Vec<u32> = text
        .trim_end_matches('=')
        .bytes()
        .map(|c| ALPHABET.iter().position(|a| *a == c).map(|p| p as u32))
        .collect::<Option<_>>()
        .with_context(|| format!("not base64: {text:?}"))?;
    if digits.len() % 4 == 1 {
        bail!("not base64 (length): {text:?}");
    }
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, d)| n | d << (18 - 6 * i));
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_4648_vectors_both_ways() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64_encode(plain.as_bytes()), encoded);
            assert_eq!(base64_decode(encoded).unwrap(), plain.as_bytes());
        }
        assert_eq!(base64_encode(b"acct/0001"), "YWNjdC8wMDAx");
        assert_eq!(base64_decode("MTAwMA==").unwrap(), b"1000");
        assert_eq!(base64_decode(&base64_encode(&[0, 255, 128, 7])).unwrap(), [0, 255, 128, 7]);
        assert!(base64_decode("a*b=").is_err());
        assert!(base64_decode("abcde").is_err());
    }

    #[test]
    fn responses_with_length_or_chunks_give_their_body() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
        assert_eq!(parse_response(plain).unwrap(), (200, b"{\"a\":1}".to_vec()));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), (200, b"{\"a\":1}".to_vec()));
        let error = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(error).unwrap().0, 400);
    }

    #[test]
    fn truncated_responses_are_errors() {
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n").is_err());
        assert!(dechunk(b"5\r\nab").is_err());
        assert!(dechunk(b"zz\r\n").is_err());
    }
}
