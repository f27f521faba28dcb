//! Where each commit's writes go: sequentially through the file (wrapping for an overwritten file, as a
//! WAL recycles its segment) or pg_test_fsync's rewrite of the same offsets from 0.

use crate::core::suite::{Case, FileState, Pattern};

/// The offsets of successive commits.
#[derive(Clone, Debug)]
pub struct OffsetPlan {
    pattern: Pattern,
    write_size_bytes: u64,
    writes_per_commit: u32,
    file_size_bytes: u64,
    /// Append and fallocate must never rewrite: their cost is extending or converting, once per block.
    wraps: bool,
    next_offset: u64,
}

impl OffsetPlan {
    /// The plan for `case` on a file region of `file_size_bytes`.
    pub fn new(case: &Case, file_size_bytes: u64) -> OffsetPlan {
        let fresh_region = case.file_state != FileState::Overwrite;
        OffsetPlan {
            // A rewrite of offset 0 would measure an overwrite, not the file state asked for.
            pattern: if fresh_region { Pattern::Sequential } else { case.pattern },
            write_size_bytes: case.write_size_bytes,
            writes_per_commit: case.writes_per_commit,
            file_size_bytes,
            wraps: !fresh_region,
            next_offset: 0,
        }
    }

    /// Fill `out` with the next commit's offsets; `false` when a non-wrapping region is used up.
    pub fn next_commit(&mut self, out: &mut Vec<u64>) -> bool {
        out.clear();
        let size = self.write_size_bytes;
        match self.pattern {
            Pattern::Rewrite => out.extend((0..u64::from(self.writes_per_commit)).map(|i| i * size)),
            Pattern::Sequential => {
                for _ in 0..self.writes_per_commit {
                    if self.next_offset + size > self.file_size_bytes {
                        if !self.wraps {
                            return false;
                        }
                        self.next_offset = 0;
                    }
                    out.push(self.next_offset);
                    self.next_offset += size;
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::method::SyncMethod;

    fn case(state: FileState, pattern: Pattern, size: u64, writes: u32) -> Case {
        Case { file_state: state, pattern, writes_per_commit: writes, ..Case::one_write(SyncMethod::Fdatasync, size) }
    }

    fn commits(plan: &mut OffsetPlan, n: usize) -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        (0..n).map_while(|_| plan.next_commit(&mut out).then(|| out.clone())).collect()
    }

    #[test]
    fn sequential_advances_and_wraps() {
        let mut p = OffsetPlan::new(&case(FileState::Overwrite, Pattern::Sequential, 4096, 2), 16384);
        assert_eq!(commits(&mut p, 3), vec![vec![0, 4096], vec![8192, 12288], vec![0, 4096]]);
    }

    #[test]
    fn a_size_that_does_not_divide_the_file_wraps_before_overrunning() {
        let mut p = OffsetPlan::new(&case(FileState::Overwrite, Pattern::Sequential, 3000, 1), 10000);
        assert_eq!(commits(&mut p, 5), vec![vec![0], vec![3000], vec![6000], vec![0], vec![3000]]);
    }

    #[test]
    fn rewrite_repeats_offset_zero() {
        let mut p = OffsetPlan::new(&case(FileState::Overwrite, Pattern::Rewrite, 8192, 2), 1 << 24);
        assert_eq!(commits(&mut p, 2), vec![vec![0, 8192], vec![0, 8192]]);
    }

    #[test]
    fn append_and_fallocate_stop_at_the_end_even_when_rewrite_was_asked() {
        for state in [FileState::Append, FileState::Fallocate] {
            let mut p = OffsetPlan::new(&case(state, Pattern::Rewrite, 4096, 1), 12288);
            assert_eq!(commits(&mut p, 10), vec![vec![0], vec![4096], vec![8192]]);
        }
    }

    proptest::proptest! {
        /// Every write stays inside the file and on a multiple of the write size (so O_DIRECT stays aligned).
        #[test]
        fn writes_stay_inside_and_aligned(size_pow in 9u32..21, writes in 1u32..17, n_commits in 1usize..300,
                                          rewrite: bool, state_index in 0usize..3) {
            let size = 1u64 << size_pow;
            let file = 4u64 << 20;
            let state = [FileState::Overwrite, FileState::Append, FileState::Fallocate][state_index];
            let pattern = if rewrite { Pattern::Rewrite } else { Pattern::Sequential };
            let mut plan = OffsetPlan::new(&case(state, pattern, size, writes), file);
            for offsets in commits(&mut plan, n_commits) {
                proptest::prop_assert_eq!(offsets.len(), writes as usize);
                for o in offsets {
                    // Rewrite puts write i at i × size from 0 whatever the file size, as pg_test_fsync does.
                    let rewrites = pattern == Pattern::Rewrite && state == FileState::Overwrite;
                    proptest::prop_assert!(o + size <= file || rewrites);
                    proptest::prop_assert_eq!(o % size, 0);
                }
            }
        }
    }
}
