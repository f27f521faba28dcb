//! Where to crash: a seeded choice of operation numbers on the timeline of a run without a crash,
//! weighted towards the moments a lost commit would be a definite bug (just after an acknowledgement)
//! and the moments recovery is hardest (inside checkpoints and double-write flushes).

use syncbench_simfs::{Mark, SimFs, SimRng};

/// The operation timeline of one uninterrupted run.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// The operation counter when the run started (setup done before it is never crashed).
    pub ops_before: u64,
    /// The operation counter when the run ended.
    pub ops: u64,
    /// The writeback counter when the run started.
    pub writebacks_before: u64,
    /// The writeback counter when the run ended (writebacks in between are candidates for an error).
    pub writebacks: u64,
    /// Storage operations of one recovery after the uninterrupted run.
    pub recovery_ops: u64,
    /// Marks the workload made during the run (`ack`, `checkpoint`, `dw_flush`, ...): see [`run_marks`].
    pub marks: Vec<Mark>,
}

/// Why a crash point was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointKind {
    /// The operation right after an acknowledgement.
    AfterAck,
    /// Near another mark (checkpoint, double-write flush).
    NearMark,
    /// Anywhere, including after the last operation.
    Uniform,
}

impl PointKind {
    /// Name used in the summary.
    pub fn name(self) -> &'static str {
        match self {
            PointKind::AfterAck => "after_ack",
            PointKind::NearMark => "near_mark",
            PointKind::Uniform => "uniform",
        }
    }
}

/// The marks made from `ops_before` on: those left while the starting state was built (a fork copies
/// them) are not part of the run and must not draw crash points.
pub fn run_marks(marks: Vec<Mark>, ops_before: u64) -> Vec<Mark> {
    marks.into_iter().filter(|m| m.op >= ops_before).collect()
}

/// Choose the operation number to crash at (`ops_before + 1 ..= ops + 1`; `ops + 1` means after the run
/// finished).
pub fn choose(timeline: &Timeline, rng: &mut SimRng) -> (u64, PointKind) {
    let acks: Vec<&Mark> = timeline.marks.iter().filter(|m| m.tag == "ack").collect();
    let others: Vec<&Mark> = timeline.marks.iter().filter(|m| m.tag != "ack").collect();
    let roll = rng.below(4);
    if roll < 2 && !acks.is_empty() {
        let mark = acks[rng.below(acks.len() as u64) as usize];
        return (mark.op + 1, PointKind::AfterAck);
    }
    if roll == 2 && !others.is_empty() {
        let mark = others[rng.below(others.len() as u64) as usize];
        return (mark.op + 1 + rng.below(16), PointKind::NearMark);
    }
    (timeline.ops_before + 1 + rng.below(timeline.ops - timeline.ops_before + 1), PointKind::Uniform)
}

/// Arm the crash of a later generation, whose timeline is not known in advance: after the n-th
/// acknowledgement (half the time), a few operations after the n-th checkpoint or flush mark (a quarter),
/// or anywhere within one first-generation run from now, the reopening recovery included.
pub fn arm_later(fs: &SimFs, timeline: &Timeline, rng: &mut SimRng) {
    let count = |tag: &str| timeline.marks.iter().filter(|m| m.tag == tag).count() as u64;
    let acks = count("ack");
    let others: Vec<&'static str> = timeline.marks.iter().map(|m| m.tag).filter(|t| *t != "ack").collect();
    let roll = rng.below(4);
    if roll < 2 && acks > 0 {
        fs.set_crash_after_mark("ack", 1 + rng.below(acks), 0);
    } else if roll == 2 && !others.is_empty() {
        let tag = others[rng.below(others.len() as u64) as usize];
        fs.set_crash_after_mark(tag, 1 + rng.below(count(tag)), rng.below(16));
    } else {
        let ops = timeline.ops - timeline.ops_before + timeline.recovery_ops;
        fs.set_crash_at_op(Some(fs.stats().ops + 1 + rng.below(ops + 1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_stay_on_the_timeline_and_favour_acknowledgements() {
        let timeline = Timeline {
            recovery_ops: 0,
            ops_before: 0,
            ops: 100,
            writebacks_before: 0,
            writebacks: 10,
            marks: vec![Mark { op: 10, tag: "ack" }, Mark { op: 50, tag: "checkpoint" }],
        };
        let mut rng = SimRng::new(3);
        let mut after_ack = 0;
        for _ in 0..400 {
            let (op, kind) = choose(&timeline, &mut rng);
            assert!((1..=101).contains(&op) || kind == PointKind::NearMark && op <= 66);
            if kind == PointKind::AfterAck {
                assert_eq!(op, 11);
                after_ack += 1;
            }
        }
        assert!(after_ack > 150, "about half the points follow an ack: {after_ack}");
    }

    #[test]
    fn uniform_points_skip_the_setup() {
        let timeline = Timeline { ops_before: 50, ops: 60, ..Timeline::default() };
        let mut rng = SimRng::new(1);
        for _ in 0..100 {
            let (op, _) = choose(&timeline, &mut rng);
            assert!((51..=61).contains(&op), "{op}");
        }
    }

    #[test]
    fn marks_left_by_the_setup_are_ignored() {
        let setup = vec![Mark { op: 5, tag: "dw_flush" }, Mark { op: 8, tag: "ack" }];
        let run = Mark { op: 55, tag: "checkpoint" };
        let all = setup.into_iter().chain([run.clone()]).collect();
        assert_eq!(run_marks(all, 50), vec![run]);
        let timeline = Timeline {
            ops_before: 50,
            ops: 60,
            marks: run_marks(vec![Mark { op: 8, tag: "ack" }], 50),
            ..Timeline::default()
        };
        let mut rng = SimRng::new(2);
        for _ in 0..200 {
            let (op, kind) = choose(&timeline, &mut rng);
            assert!((51..=61).contains(&op) && kind == PointKind::Uniform, "{op} {kind:?}");
        }
    }

    #[test]
    fn an_empty_timeline_still_gives_a_point() {
        let (op, kind) = choose(&Timeline::default(), &mut SimRng::new(0));
        assert_eq!((op, kind), (1, PointKind::Uniform));
    }
}
