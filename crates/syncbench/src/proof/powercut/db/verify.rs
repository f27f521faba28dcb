//! After a cut and the server's recovery: is every acknowledged transfer there, is every row one we wrote,
//! and do the balances say what the history says? A pure function of what was read back, what was
//! acknowledged and what was issued, so that it can be tested on planted states.

use super::{DbState, INITIAL_BALANCE, Transfer};
use std::collections::{HashMap, HashSet};

/// At most this many examples are kept per verification.
const EXAMPLES_MAX: usize = 5;

/// What the read-back state showed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DbVerification {
    /// Transfers acknowledged on this data (all cuts since it was made).
    pub acknowledged: u64,
    /// Acknowledged transfers whose history row is there.
    pub present: u64,
    /// Acknowledged transfers without a history row: the failure this campaign exists to find.
    pub lost: u64,
    /// Acknowledged ids this cell never issued (acks from another run: a bug of the campaign, or a witness
    /// fed by someone else).
    pub acks_not_issued: u64,
    /// Issued but unacknowledged transfers present (allowed: the commit may have reached the disk before
    /// the power went without its answer reaching the client).
    pub unacknowledged_present: u64,
    /// History rows with an id this cell never issued.
    pub foreign_rows: u64,
    /// History rows whose id was issued but whose fields differ from the transfer.
    pub garbled_rows: u64,
    /// Ids with more than one history row (the extra rows).
    pub duplicate_rows: u64,
    /// Σ balances − accounts × INITIAL_BALANCE (0 when the total is kept).
    pub balance_sum_off_by: i64,
    /// Accounts whose balance differs from INITIAL_BALANCE + credits − debits of the history rows (a
    /// transfer half applied), counting a missing or extra account row as one each.
    pub accounts_inconsistent: u64,
    /// The first problems, described.
    pub examples: Vec<String>,
}

impl DbVerification {
    /// Whether the data contradicts what the server promised: a lost acknowledged transfer, a row we never
    /// wrote or wrote differently, a broken invariant.
    pub fn failed(&self) -> bool {
        self.lost + self.acks_not_issued > 0 || !self.invariants_hold()
    }
    /// The balance invariants and the history's integrity (independent of acknowledgements).
    pub fn invariants_hold(&self) -> bool {
        self.foreign_rows + self.garbled_rows + self.duplicate_rows + self.accounts_inconsistent == 0
            && self.balance_sum_off_by == 0
    }
    fn example(&mut self, text: impl FnOnce() -> String) {
        if self.examples.len() < EXAMPLES_MAX {
            self.examples.push(text());
        }
    }
}

/// Check `state` against the transfers `acked` (ids) and `issued` (every transfer sent on this data,
/// acknowledged or not) over `accounts` accounts.
pub fn verify(state: &DbState, acked: &HashSet<u64>, issued: &HashMap<u64, Transfer>, accounts: u32) -> DbVerification {
    let mut v = DbVerification { acknowledged: acked.len() as u64, ..DbVerification::default() };
    let rows = check_rows(&mut v, &state.history, issued, accounts);
    let mut lost: Vec<u64> = Vec::new();
    for id in acked {
        if !issued.contains_key(id) {
            v.acks_not_issued += 1;
            v.example(|| format!("acknowledged id {id:#x} was never issued on this data"));
        } else if rows.contains(id) {
            v.present += 1;
        } else {
            lost.push(*id);
        }
    }
    lost.sort_unstable();
    v.lost = lost.len() as u64;
    for id in lost.iter().take(EXAMPLES_MAX) {
        v.example(|| format!("transfer {id:#x} was acknowledged but has no history row"));
    }
    v.unacknowledged_present = rows.iter().filter(|id| issued.contains_key(id) && !acked.contains(id)).count() as u64;
    check_balances(&mut v, state, accounts);
    v
}

/// Count foreign, garbled and duplicate history rows; the distinct ids present.
fn check_rows(
    v: &mut DbVerification,
    history: &[Transfer],
    issued: &HashMap<u64, Transfer>,
    accounts: u32,
) -> HashSet<u64> {
    let mut ids = HashSet::with_capacity(history.len());
    for row in history {
        if !ids.insert(row.id) {
            v.duplicate_rows += 1;
            v.example(|| format!("history id {:#x} appears more than once", row.id));
        }
        match issued.get(&row.id) {
            None => {
                v.foreign_rows += 1;
                v.example(|| format!("history row {row:?} was never issued"));
            }
            Some(t) if t != row || row.from >= accounts || row.to >= accounts => {
                v.garbled_rows += 1;
                v.example(|| format!("history row {row:?} differs from the transfer issued: {t:?}"));
            }
            Some(_) => {}
        }
    }
    ids
}

/// The sum of the balances, and each balance against what the history rows say.
fn check_balances(v: &mut DbVerification, state: &DbState, accounts: u32) {
    let n = accounts as usize;
    v.balance_sum_off_by = state.balances.iter().sum::<i64>() - i64::from(accounts) * INITIAL_BALANCE;
    if v.balance_sum_off_by != 0 {
        let off = v.balance_sum_off_by;
        v.example(|| format!("the balances sum to {off:+} off the total"));
    }
    if state.balances.len() != n {
        v.accounts_inconsistent += state.balances.len().abs_diff(n) as u64;
        let got = state.balances.len();
        v.example(|| format!("{got} account rows read, {n} made"));
    }
    let mut expected = vec![INITIAL_BALANCE; n];
    for row in &state.history {
        if (row.from as usize) < n && (row.to as usize) < n {
            expected[row.from as usize] -= row.amount;
            expected[row.to as usize] += row.amount;
        }
    }
    for (account, (got, want)) in state.balances.iter().zip(&expected).enumerate() {
        if got != want {
            v.accounts_inconsistent += 1;
            v.example(|| format!("account {account} holds {got}, its history says {want}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNTS: u32 = 4;

    fn t(id: u64, from: u32, to: u32, amount: i64) -> Transfer {
        Transfer { id, from, to, amount }
    }

    /// Five transfers issued, 1–4 acknowledged, 1–5 applied: the state after an honest cut.
    fn honest() -> (DbState, HashSet<u64>, HashMap<u64, Transfer>) {
        let issued: Vec<Transfer> = vec![t(1, 0, 1, 10), t(2, 1, 2, 20), t(3, 2, 3, 30), t(4, 3, 0, 40), t(5, 0, 0, 5)];
        let state = apply(&issued);
        let acked = (1..=4).collect();
        (state, acked, issued.into_iter().map(|t| (t.id, t)).collect())
    }

    fn apply(history: &[Transfer]) -> DbState {
        let mut balances = vec![INITIAL_BALANCE; ACCOUNTS as usize];
        for t in history {
            balances[t.from as usize] -= t.amount;
            balances[t.to as usize] += t.amount;
        }
        DbState { balances, history: history.to_vec() }
    }

    #[test]
    fn an_honest_state_passes_and_counts_the_unacknowledged_rows_present() {
        let (state, acked, issued) = honest();
        let v = verify(&state, &acked, &issued, ACCOUNTS);
        assert!(!v.failed(), "{v:?}");
        assert_eq!((v.acknowledged, v.present, v.lost, v.unacknowledged_present), (4, 4, 0, 1));
    }

    #[test]
    fn a_lost_acknowledged_transfer_fails_while_a_lost_unacknowledged_one_does_not() {
        let (_, acked, issued) = honest();
        let kept = [issued[&1], issued[&2], issued[&4]];
        let v = verify(&apply(&kept), &acked, &issued, ACCOUNTS);
        assert!(v.failed() && v.invariants_hold());
        assert_eq!((v.lost, v.present, v.unacknowledged_present), (1, 3, 0));
        assert!(v.examples[0].contains("0x3"), "{:?}", v.examples);

        let all_acked = [issued[&1], issued[&2], issued[&3], issued[&4]];
        assert!(!verify(&apply(&all_acked), &acked, &issued, ACCOUNTS).failed());
    }

    #[test]
    fn a_half_applied_transfer_breaks_the_per_account_invariant() {
        let (mut state, acked, issued) = honest();
        // Transfer 2's debit without its credit: the total and two accounts are off.
        state.balances[2] -= 20;
        let v = verify(&state, &acked, &issued, ACCOUNTS);
        assert!(v.failed() && !v.invariants_hold());
        assert_eq!((v.lost, v.balance_sum_off_by, v.accounts_inconsistent), (0, -20, 1));
        // A row without its balance updates: the total holds, two accounts do not.
        let (mut state, acked, issued) = honest();
        state.balances = apply(&state.history[..4]).balances;
        let v = verify(&state, &acked, &issued, ACCOUNTS);
        assert_eq!((v.balance_sum_off_by, v.accounts_inconsistent), (0, 0), "transfer 5 moves 0 net: {v:?}");
        state.balances = apply(&state.history[..3]).balances;
        let v = verify(&state, &acked, &issued, ACCOUNTS);
        assert_eq!((v.balance_sum_off_by, v.accounts_inconsistent), (0, 2));
    }

    #[test]
    fn acks_from_another_run_and_rows_never_issued_are_reported() {
        let (state, mut acked, issued) = honest();
        acked.insert(0xdead);
        let v = verify(&state, &acked, &issued, ACCOUNTS);
        assert_eq!((v.acks_not_issued, v.lost), (1, 0));
        assert!(v.failed());

        let (mut state, acked, issued) = honest();
        state.history.push(t(99, 0, 1, 0));
        let v = verify(&state, &acked, &issued, ACCOUNTS);
        assert_eq!(v.foreign_rows, 1);
        assert!(v.failed());
    }

    #[test]
    fn garbled_and_duplicated_rows_and_missing_accounts_are_reported() {
        let (mut state, acked, issued) = honest();
        state.history[0].amount = 11;
        state.history.push(state.history[1]);
        state.balances.pop();
        let v = verify(&state, &acked, &issued, ACCOUNTS);
        assert_eq!((v.garbled_rows, v.duplicate_rows), (1, 1));
        assert!(v.accounts_inconsistent >= 1 && v.balance_sum_off_by != 0);
        assert!(v.failed());
    }
}
