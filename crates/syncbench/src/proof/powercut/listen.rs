//! `powercut listen`: the witness on another machine. It accepts one writer's connection and appends
//! every whole line it receives to ACKS, fdatasyncing after each read, so what it acknowledged survives
//! even its own crash. The writer vanishing (its power cut: a reset, or silence with no FIN) loses at
//! most a partial last line, which is dropped: a line is only an ack once its newline arrived.

use anyhow::Context;
use std::io::Read;
use std::net::TcpListener;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the listener received.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Received {
    /// Whole lines written to ACKS.
    pub lines: u64,
    /// Bytes of a last line that never got its newline (dropped).
    pub partial_bytes: usize,
    /// How the connection ended: `closed`, `stopped` or the error (a reset when the writer's power went).
    pub ended_by: String,
}

/// Accept one connection on `listener` and record its whole lines into `out` (a new file the caller
/// created). Returns when the writer closes, the connection fails, or `stop` is set.
pub fn record(listener: &TcpListener, out: &std::fs::File, stop: &AtomicBool) -> anyhow::Result<Received> {
    listener.set_nonblocking(true)?;
    let mut stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(Received {
                        ended_by: "stopped before a writer connected".into(),
                        ..Received::default()
                    });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e).context("accepting the writer's connection"),
        }
    };
    stream.set_nonblocking(false)?;
    // Wake up now and then to see `stop`: a writer whose power was cut sends nothing, not even a FIN.
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut received = Received::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut offset = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    received.ended_by = loop {
        if stop.load(Ordering::Relaxed) {
            break "stopped".into();
        }
        let n = match stream.read(&mut buf) {
            Ok(0) => break "closed".into(),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => break format!("connection failed: {e}"),
        };
        pending.extend_from_slice(&buf[..n]);
        let Some(end) = pending.iter().rposition(|&b| b == b'\n') else { continue };
        let whole: Vec<u8> = pending.drain(..=end).collect();
        syncbench_sys::pwrite_all(out.as_fd(), &whole, offset).context("writing the acks file")?;
        syncbench_sys::fdatasync(out.as_fd()).context("fdatasync of the acks file")?;
        offset += whole.len() as u64;
        received.lines += whole.iter().filter(|&&b| b == b'\n').count() as u64;
    };
    received.partial_bytes = pending.len();
    Ok(received)
}

/// Create ACKS (refusing an existing file: syncbench never writes to a file it did not create).
pub fn create_acks(path: &Path) -> anyhow::Result<std::fs::File> {
    let fd = syncbench_sys::create_new(path, syncbench_sys::OpenFlags::BUFFERED)
        .with_context(|| format!("creating {}", path.display()))?;
    Ok(std::fs::File::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn whole_lines_are_kept_and_a_line_cut_off_by_a_vanished_writer_is_dropped() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"header\nappend 1 0\nappend 2").unwrap();
            // The writer vanishes mid-line.
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acks");
        let out = create_acks(&path).unwrap();
        let got = record(&listener, &out, &AtomicBool::new(false)).unwrap();
        writer.join().unwrap();
        assert_eq!(got, Received { lines: 2, partial_bytes: 8, ended_by: "closed".into() });
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "header\nappend 1 0\n");
        assert!(create_acks(&path).is_err(), "an existing acks file must not be reused");
    }
}
