//! Keep what was measured: the results finished so far, shared with the Ctrl-C/SIGTERM handler so an
//! interrupted command still prints and exports them (marked partial) before it removes its files.

use crate::core::schema::CaseResult;
use std::sync::{Arc, Mutex, MutexGuard};

type Slots = Arc<Mutex<Option<Vec<Option<CaseResult>>>>>;

/// The results so far, one slot per case of the plan.
#[derive(Clone)]
pub struct Partial {
    slots: Slots,
}

impl Partial {
    /// `len` empty slots.
    pub fn new(len: usize) -> Partial {
        Partial { slots: Arc::new(Mutex::new(Some(vec![None; len]))) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Vec<Option<CaseResult>>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Case `index` now stands at `result`.
    pub fn update(&self, index: usize, result: Option<&CaseResult>) {
        if let Some(slot) = self.lock().as_mut().and_then(|s| s.get_mut(index)) {
            *slot = result.cloned();
        }
    }

    /// The cases with at least one finished round, in plan order (`None` once [`Partial::finish`] ran).
    pub fn finished(&self) -> Option<Vec<CaseResult>> {
        Some(self.lock().as_ref()?.iter().flatten().cloned().collect())
    }

    /// On SIGINT/SIGTERM, before files are removed, call `report` with the finished cases (unless the
    /// command already reported everything).
    pub fn on_interrupt(&self, report: impl Fn(Vec<CaseResult>) + Send + Sync + 'static) {
        let me = self.clone();
        crate::core::cleanup::on_signal(move || {
            if let Some(results) = me.finished() {
                report(results);
            }
        });
    }

    /// The command reports everything itself from now on: an interrupt must not report again.
    pub fn finish(&self) {
        self.lock().take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_finished_cases_in_plan_order_until_finished() {
        let p = Partial::new(3);
        let case = |label: &str| CaseResult { label: label.into(), ..CaseResult::default() };
        p.update(2, Some(&case("c")));
        p.update(0, Some(&case("a")));
        p.update(7, Some(&case("out of range")));
        let labels: Vec<String> = p.finished().unwrap().into_iter().map(|c| c.label).collect();
        assert_eq!(labels, ["a", "c"]);
        p.finish();
        assert!(p.finished().is_none());
    }
}
