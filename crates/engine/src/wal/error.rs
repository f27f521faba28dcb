//! Errors of the write-ahead log.

use std::io;

/// What went wrong in the log.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// A write or sync failed earlier (or just now): the log stopped. Commits that were waiting, and every
    /// commit since, have an UNKNOWN outcome: their records may or may not be durable. Reopen the log
    /// (recovery decides) — never retry the sync.
    #[error(
        "the log is poisoned after a failed {what}: commit outcome unknown (may or may not be durable); \
         reopen the log to recover: {cause}"
    )]
    Poisoned {
        /// The operation that failed first.
        what: &'static str,
        /// The first error, as text (errors are reported to every waiter).
        cause: String,
    },
    /// An I/O error outside the commit path (open, recovery reads, segment management). The OS error is
    /// part of the message and deliberately not also a `source`: a report that prints the chain would
    /// say it twice.
    #[error("{what}: {error}")]
    Io {
        /// What the log was doing.
        what: String,
        /// The OS error.
        error: io::Error,
    },
    /// Recovery found a damaged record followed by records written by a later flush: bytes that had
    /// been made durable were lost or changed. The log refuses to open rather than drop them.
    #[error(
        "log corrupted: bad record at LSN {bad_lsn} ({reason}) but a later flush wrote a valid record at LSN {later_lsn}"
    )]
    Corruption {
        /// Where the damaged record is.
        bad_lsn: u64,
        /// Why it was rejected.
        reason: String,
        /// A valid record from a later flush, proving the damaged one had been durable.
        later_lsn: u64,
    },
    /// The caller asked for something the log cannot do.
    #[error("{0}")]
    Invalid(String),
}

impl WalError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> WalError {
        WalError::Io { what: what.into(), error: source }
    }

    /// Whether this error means "outcome unknown" (the log is poisoned).
    pub fn is_poisoned(&self) -> bool {
        matches!(self, WalError::Poisoned { .. })
    }
}

/// Result of a log operation.
pub type WalResult<T> = Result<T, WalError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_is_said_once_when_the_chain_is_printed() {
        let e = WalError::io("cannot create log segment", io::Error::from_raw_os_error(28));
        let chain = anyhow_like_chain(&e);
        assert_eq!(chain.matches("os error 28").count(), 1, "{chain}");
    }

    /// What `{:#}` of an error report prints: every error of the source chain, joined by ": ".
    fn anyhow_like_chain(e: &dyn std::error::Error) -> String {
        let mut parts = vec![e.to_string()];
        let mut next = e.source();
        while let Some(cause) = next {
            parts.push(cause.to_string());
            next = cause.source();
        }
        parts.join(": ")
    }
}
