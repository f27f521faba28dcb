//! Keep what was measured: the results finished so far, shared with the Ctrl-C/SIGTERM handler so an
//! interrupted command still prints and exports them (marked partial) before it removes its files.
//! One mechanism for every measuring command: `run`'s cases, `commit`'s points and `pages`' rows are each
//! a slot of the plan, filled as their rounds finish.

use std::sync::{Arc, Mutex, MutexGuard};

/// The line that marks an interrupted command's answer (text and Markdown) as partial.
pub const MARKER: &str = "PARTIAL: interrupted — only the rounds finished so far are counted below";

/// `answer` (an `answer:` line and its indented lines) with the [`MARKER`] as its first item.
pub fn mark_answer(answer: &str) -> String {
    match answer.split_once('\n') {
        Some((first, rest)) => format!("{first}\n  {MARKER}\n{rest}"),
        None => format!("{answer}\n  {MARKER}\n"),
    }
}

type Slots<T> = Arc<Mutex<Option<Vec<Option<T>>>>>;

/// The results so far, one slot per item of the plan (a case of `run`, a point of `commit`, a row of
/// `pages`).
pub struct Partial<T> {
    slots: Slots<T>,
}

// Not derived: a derive would ask `T: Clone` of the handle, which only clones the `Arc`.
impl<T> Clone for Partial<T> {
    fn clone(&self) -> Self {
        Partial { slots: Arc::clone(&self.slots) }
    }
}

impl<T: Clone + Send + 'static> Partial<T> {
    /// `len` empty slots.
    pub fn new(len: usize) -> Partial<T> {
        Partial { slots: Arc::new(Mutex::new(Some(vec![None; len]))) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Vec<Option<T>>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Item `index` now stands at `result`.
    pub fn update(&self, index: usize, result: Option<&T>) {
        if let Some(slot) = self.lock().as_mut().and_then(|s| s.get_mut(index)) {
            *slot = result.cloned();
        }
    }

    /// The items with at least one finished round, in plan order (`None` once [`Partial::finish`] ran).
    pub fn finished(&self) -> Option<Vec<T>> {
        Some(self.lock().as_ref()?.iter().flatten().cloned().collect())
    }

    /// On SIGINT/SIGTERM, before files are removed, call `report` with the finished items (unless the
    /// command already reported everything).
    pub fn on_interrupt(&self, report: impl Fn(Vec<T>) + Send + Sync + 'static) {
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
    use crate::core::schema::CaseResult;

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

    #[test]
    fn the_marker_opens_the_answer() {
        let marked = mark_answer("answer:\n  verdict: ok\n  next: x\n");
        assert_eq!(marked, format!("answer:\n  {MARKER}\n  verdict: ok\n  next: x\n"));
    }
}
