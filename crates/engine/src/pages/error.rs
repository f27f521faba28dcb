//! Errors of the page store. Callers tell "outcome unknown" ([`PageError::is_poisoned`]) from a damaged
//! store, a full pool and plain I/O without matching message text.

use crate::wal::WalError;
use std::io;

/// What went wrong in the page store.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// An earlier write or sync failed (a data file, the double-write area, or the log): the store stopped.
    /// Transactions that were in flight have an unknown outcome; reopen the store (recovery decides).
    #[error("page store stopped after an earlier failure: {cause}")]
    Poisoned {
        /// The first failure, as text.
        cause: String,
    },
    /// The log failed. When the log is poisoned ([`WalError::is_poisoned`]) so is this error.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// A page fails its checksum and cannot be repaired, or the files contradict each other.
    #[error("{0}")]
    Corruption(String),
    /// Every frame of the buffer pool is pinned or being written.
    #[error("buffer pool exhausted: every frame is pinned or being written; use a larger pool")]
    PoolExhausted,
    /// The configuration or the request does not fit this store.
    #[error("{0}")]
    Invalid(String),
    /// An I/O error of a data file, the double-write area or the control file.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl PageError {
    /// Whether this error means "outcome unknown": the store (or its log) stopped after a failed write or
    /// sync. Never retry; reopen.
    pub fn is_poisoned(&self) -> bool {
        match self {
            PageError::Poisoned { .. } => true,
            PageError::Wal(e) => e.is_poisoned(),
            _ => false,
        }
    }
}

/// For callers that speak `io::Result` (the bank workload): the typed error stays inside, reachable with
/// `io::Error::get_ref` and `downcast_ref::<PageError>()`.
impl From<PageError> for io::Error {
    fn from(e: PageError) -> io::Error {
        let kind = match &e {
            PageError::Io(io) => return io::Error::new(io.kind(), e),
            PageError::Corruption(_) => io::ErrorKind::InvalidData,
            PageError::Invalid(_) => io::ErrorKind::InvalidInput,
            PageError::Poisoned { .. } | PageError::Wal(_) | PageError::PoolExhausted => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

/// Result of a page-store operation.
pub type PageResult<T> = Result<T, PageError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisoning_is_carried_from_the_log_and_survives_io_error_wrapping() {
        let wal_poisoned = PageError::from(WalError::Poisoned { what: "fsync", cause: "EIO".into() });
        assert!(wal_poisoned.is_poisoned());
        assert!(!PageError::from(WalError::Invalid("x".into())).is_poisoned());
        assert!(PageError::Poisoned { cause: "EIO".into() }.is_poisoned());
        assert!(!PageError::PoolExhausted.is_poisoned() && !PageError::Corruption("x".into()).is_poisoned());
        let wrapped = io::Error::from(wal_poisoned);
        let inner = wrapped.get_ref().and_then(|e| e.downcast_ref::<PageError>()).unwrap();
        assert!(inner.is_poisoned());
        let io = io::Error::from(PageError::Io(io::Error::from_raw_os_error(libc_enospc())));
        assert_eq!(io.raw_os_error(), None, "wrapped, but the kind is kept");
        assert_eq!(io.kind(), io::ErrorKind::StorageFull);
    }

    fn libc_enospc() -> i32 {
        28
    }
}
