//! `--mock-timing SEED`: a virtual clock and a deterministic latency model, so `run` produces realistic,
//! reproducible results without touching a disk (golden tests of the exports and the advice rules).
//!
//! The model is shaped like the project machine (virtio disk with a write-back cache, ~5000 fdatasync/s):
//! a per-method base, a per-byte cost, one sync per write for the O_*SYNC and RWF_* methods, slower
//! append/fallocate metadata, log-normal-ish jitter and rare stalls. The numbers are made up, never measured.

use super::{CommitExecutor, Measurement, OffsetPlan, RunBudget, measure};
use crate::core::method::{SyncCall, SyncMethod, WriteCall};
use crate::core::suite::{Case, FileState, Shape};
use std::cell::Cell;
use std::io;
use std::rc::Rc;

/// Deterministic timing from a seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MockTiming {
    /// Same seed, same case → same samples.
    pub seed: u64,
}

/// The file region the mock pretends to write (16 MiB, like the real default), so append and fallocate
/// cases stop at the same commit count as on a disk.
const MOCK_FILE_SIZE_BYTES: u64 = 16 << 20;

impl MockTiming {
    /// Run `case` against the model.
    pub fn run(&self, case: &Case, budget: &RunBudget) -> Measurement {
        let now = Rc::new(Cell::new(0u64));
        let mut exec = MockExecutor {
            now: now.clone(),
            rng: self.seed ^ fnv1a(case.section.name()) ^ fnv1a(&case.label).rotate_left(17),
            base_ns: model_ns(case),
            plan: OffsetPlan::new(case, MOCK_FILE_SIZE_BYTES),
            offsets: Vec::new(),
        };
        let mut clock = VirtualClock(now);
        match measure(&mut exec, &mut clock, budget) {
            Ok(m) => m,
            Err(_) => unreachable!("the mock executor never fails"),
        }
    }
}

struct VirtualClock(Rc<Cell<u64>>);

impl super::Clock for VirtualClock {
    fn now_ns(&mut self) -> u64 {
        self.0.get()
    }
}

struct MockExecutor {
    now: Rc<Cell<u64>>,
    rng: u64,
    base_ns: f64,
    plan: OffsetPlan,
    offsets: Vec<u64>,
}

impl CommitExecutor for MockExecutor {
    fn prepare_next(&mut self) -> bool {
        self.plan.next_commit(&mut self.offsets)
    }

    fn commit(&mut self) -> io::Result<()> {
        self.rng = splitmix64(self.rng);
        let u1 = unit(self.rng);
        self.rng = splitmix64(self.rng);
        let u2 = unit(self.rng);
        // Sum of two uniforms: a triangular spread of ±15% around the base; 1 in 500 commits stalls 8×.
        let factor = if u1 < 0.002 { 8.0 } else { 0.85 + 0.15 * (u1 + u2) };
        let latency_ns = (self.base_ns * factor).max(1.0) as u64;
        self.now.set(self.now.get() + latency_ns + 40);
        Ok(())
    }
}

/// The mean commit latency the model assigns to a case, in ns.
fn model_ns(case: &Case) -> f64 {
    let method = case.method;
    let bytes = case.write_size_bytes as f64;
    let writes = f64::from(case.writes_per_commit);
    // Page-cache copy ~2 GB/s, device transfer ~400 MB/s.
    let copy_ns = bytes * 0.5;
    let transfer_ns = bytes * 2.5;
    let flush_ns = 160_000.0;
    let per_write_sync = matches!(method.write_call(), WriteCall::Pwritev2(_))
        || matches!(method, SyncMethod::OpenDatasync | SyncMethod::OpenSync)
        || matches!(method, SyncMethod::OpenDatasyncDirect | SyncMethod::OpenSyncDirect);
    let metadata_ns = match method {
        SyncMethod::OpenSync | SyncMethod::OpenSyncDirect | SyncMethod::Pwritev2Sync => 30_000.0,
        m if m.sync_call() == SyncCall::Fsync => 30_000.0,
        _ => 0.0,
    };
    let direct_discount = if method.is_direct() { 0.85 } else { 1.0 };
    let base = match method {
        SyncMethod::Write => writes * (1_500.0 + copy_ns),
        SyncMethod::Direct => writes * (60_000.0 + transfer_ns),
        SyncMethod::SyncFileRange => writes * copy_ns + 70_000.0 + writes * transfer_ns,
        _ if per_write_sync => writes * ((flush_ns + metadata_ns) * direct_discount + transfer_ns),
        _ => writes * (copy_ns + transfer_ns) + (flush_ns + metadata_ns) * direct_discount,
    };
    let state = match case.file_state {
        FileState::Overwrite => 1.0,
        FileState::Append => 1.6,
        FileState::Fallocate => 1.9,
    };
    let reopen_ns = if case.shape == Shape::Steady { 0.0 } else { 6_000.0 };
    base * state + reopen_ns
}

pub(crate) use crate::core::hash::splitmix64;

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

fn fnv1a(text: &str) -> u64 {
    crate::core::hash::fnv1a64(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::suite::{PlanOptions, plan};
    use crate::measure::runner::{Target, run_case};

    #[test]
    fn same_seed_same_results_other_seed_other_results() {
        let budget = RunBudget::per_case(0.1);
        let cases = plan(&PlanOptions { quick: true, ..PlanOptions::default() });
        let run =
            |seed| cases.iter().map(|c| run_case(c, &budget, &Target::Mock(MockTiming { seed }))).collect::<Vec<_>>();
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        assert!(a.iter().all(|r| r.supported && r.error.is_none() && r.ops > 0));
    }

    #[test]
    fn the_model_orders_methods_plausibly() {
        let budget = RunBudget::per_case(0.2);
        let mock = Target::Mock(MockTiming { seed: 1 });
        let ops = |m| run_case(&Case::one_write(m, 8192), &budget, &mock).ops_per_s;
        assert!(ops(SyncMethod::Write) > 20.0 * ops(SyncMethod::Fdatasync));
        assert!(ops(SyncMethod::Fdatasync) > ops(SyncMethod::Fsync));
        let fdatasync = ops(SyncMethod::Fdatasync);
        assert!((3_000.0..7_000.0).contains(&fdatasync), "{fdatasync}");
    }
}
