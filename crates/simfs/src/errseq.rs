//! Linux `errseq_t`: how a writeback error reaches the `fsync` callers (Linux >= 4.17 semantics).
//!
//! The inode keeps one error sequence; every open file description keeps a sample of it. A sync reports
//! the error iff the inode's sequence moved past the caller's sample, then advances the sample: each
//! description sees a given error once, and later syncs return 0 although the data is gone. A description
//! opened after an error that nobody has seen yet samples 0 so it still sees it ("report at least once").

/// The inode side: how many writeback errors happened and whether anyone has seen the latest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrSeq {
    errors: u64,
    seen: bool,
}

impl ErrSeq {
    /// Record a new writeback error (nobody has seen it yet).
    pub fn record_error(&mut self) {
        self.errors += 1;
        self.seen = false;
    }

    /// What a newly opened file description samples (`errseq_sample`).
    pub fn sample(&self) -> u64 {
        if self.seen { self.errors } else { 0 }
    }

    /// `file_check_and_advance_wb_err`: true (report EIO) iff an error happened since `sample`.
    pub fn check_and_advance(&mut self, sample: &mut u64) -> bool {
        if *sample == self.errors {
            return false;
        }
        *sample = self.errors;
        self.seen = true;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_description_sees_an_error_once() {
        let mut inode = ErrSeq::default();
        let mut fd1 = inode.sample();
        let mut fd2 = inode.sample();
        inode.record_error();
        assert!(inode.check_and_advance(&mut fd1));
        assert!(!inode.check_and_advance(&mut fd1), "second fsync on the same fd returns 0");
        assert!(inode.check_and_advance(&mut fd2), "another fd still sees it once");
        assert!(!inode.check_and_advance(&mut fd2));
    }

    #[test]
    fn a_later_open_sees_an_unseen_error_but_not_a_seen_one() {
        let mut inode = ErrSeq::default();
        inode.record_error();
        let mut late = inode.sample();
        assert!(inode.check_and_advance(&mut late), "4.17: unseen error is reported to a new opener");
        let mut later = inode.sample();
        assert!(!inode.check_and_advance(&mut later), "already seen: a new opener gets 0");
        inode.record_error();
        assert!(inode.check_and_advance(&mut later), "a new error is reported again");
    }
}
