//! Where to crash: a seeded choice of operation numbers on the timeline of a run without a crash,
//! weighted towards the moments a lost commit would be a definite bug (just after an acknowledgement)
//! and the moments recovery is hardest (inside checkpoints and double-write flushes).

use syncbench_simfs::{Mark, SimRng};

/// The operation timeline of one uninterrupted run.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Storage operations the run issued.
    pub ops: u64,
    /// Writebacks that had something to write (candidates for an injected error).
    pub writebacks: u64,
    /// Marks the workload made (`ack`, `checkpoint`, `dw_flush`, ...).
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

/// Choose the operation number to crash at (1-based; `ops + 1` means after the run finished).
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
        return (mark.op + 1 + rng.below(4), PointKind::NearMark);
    }
    (1 + rng.below(timeline.ops + 1), PointKind::Uniform)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_stay_on_the_timeline_and_favour_acknowledgements() {
        let timeline = Timeline {
            ops: 100,
            writebacks: 10,
            marks: vec![Mark { op: 10, tag: "ack" }, Mark { op: 50, tag: "checkpoint" }],
        };
        let mut rng = SimRng::new(3);
        let mut after_ack = 0;
        for _ in 0..400 {
            let (op, kind) = choose(&timeline, &mut rng);
            assert!((1..=101).contains(&op) || kind == PointKind::NearMark && op <= 54);
            if kind == PointKind::AfterAck {
                assert_eq!(op, 11);
                after_ack += 1;
            }
        }
        assert!(after_ack > 150, "about half the points follow an ack: {after_ack}");
    }

    #[test]
    fn an_empty_timeline_still_gives_a_point() {
        let (op, kind) = choose(&Timeline::default(), &mut SimRng::new(0));
        assert_eq!((op, kind), (1, PointKind::Uniform));
    }
}
