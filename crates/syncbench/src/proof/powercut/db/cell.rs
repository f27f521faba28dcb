//! What `powercut db` and `powercut run` found: one cut, one cell (database × settings × profile × fs),
//! and the verdict in words.

use super::verify::DbVerification;

/// The server would not start or recover after a cut.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RecoveryFailure {
    /// What failed, in one line.
    pub summary: String,
    /// The last lines of its log.
    pub log_excerpt: String,
}

/// The database's own integrity check.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct IntegrityResult {
    /// It passed.
    pub ok: bool,
    /// Its words.
    pub detail: String,
}

/// What an aimed cut (`--aim`) waited for and hit.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct AimedCut {
    /// A matching write was in flight when the power went; if not, the cut came unaimed after `waited_ms`.
    pub met: bool,
    /// How long the cut waited for it, the load running on.
    pub waited_ms: u64,
    /// The write's device offset and length (when met).
    pub write_offset: Option<u64>,
    /// Its length in bytes.
    pub write_bytes: Option<u64>,
    /// The cut tore it at an untorn-unit boundary (it spans two or more units); else it was kept or lost whole.
    pub torn: bool,
    /// Where it landed (when met): `data`, `log`, `other` (a file of the database), or absent: in no file
    /// of the database (file system metadata or journal).
    pub landed_in: Option<super::aim::FileRole>,
    /// The file it landed in, relative to the database's directory.
    pub file: Option<String>,
}

/// One cut.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DbCut {
    /// The cut's seed (what the device's cache keeps).
    pub seed: u64,
    /// When the power went, after the load started.
    pub cut_after_ms: u64,
    /// Transfers acknowledged in this cut's load.
    pub acknowledged: u64,
    /// Transfers sent in this cut's load (acknowledged or not).
    pub issued: u64,
    /// Transfers the server rolled back under contention (busy, deadlock), not acknowledged.
    pub rolled_back: u64,
    /// Clients that failed while the power was still on, with their errors.
    pub client_errors: Vec<String>,
    /// Acknowledged transfers per second of load.
    pub transfers_per_s: f64,
    /// Writes the device's cache lost (its own count).
    pub device_lost_writes: u64,
    /// The file system needed a repair to mount after the cut.
    pub repaired_with: Option<String>,
    /// The server did not recover.
    pub recovery_failure: Option<RecoveryFailure>,
    /// The server recovered but its data could not be read back.
    pub read_error: Option<String>,
    /// Every acknowledged transfer of this data checked against what was read back.
    pub verification: Option<DbVerification>,
    /// The database's own check.
    pub integrity: Option<IntegrityResult>,
    /// For an aimed cut: whether it found its write, and where that write landed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aim: Option<AimedCut>,
    /// How long the server took to start and recover.
    pub restart_ms: u64,
    /// The whole cut: load, cut, reboot, recovery, checks.
    pub cut_ms: u64,
}

impl DbCut {
    /// Acknowledged transfers lost.
    pub fn lost(&self) -> u64 {
        self.verification.as_ref().map_or(0, |v| v.lost)
    }
    /// The server did not recover.
    pub fn failed_recovery(&self) -> bool {
        self.recovery_failure.is_some()
    }
    /// The data could not be read, or the database's own check failed.
    pub fn integrity_failed(&self) -> bool {
        self.read_error.is_some() || self.integrity.as_ref().is_some_and(|i| !i.ok)
    }
    /// A balance invariant broken, a row we never wrote, or an ack we never issued.
    pub fn invariant_broken(&self) -> bool {
        self.verification.as_ref().is_some_and(|v| !v.invariants_hold() || v.acks_not_issued > 0)
    }
    /// Anything the server promised not to do.
    pub fn damaged(&self) -> bool {
        self.lost() > 0 || self.failed_recovery() || self.integrity_failed() || self.invariant_broken()
    }
    /// The first problem, in words (empty if none).
    pub fn problem(&self) -> String {
        if let Some(f) = &self.recovery_failure {
            return format!("recovery failed: {}: {}", f.summary, super::process::tail(&f.log_excerpt, 2));
        }
        if let Some(e) = &self.read_error {
            return e.clone();
        }
        let examples = self.verification.as_ref().and_then(|v| v.examples.first().cloned()).unwrap_or_default();
        match &self.integrity {
            Some(i) if !i.ok => format!("integrity check failed: {}", i.detail.lines().next().unwrap_or("")),
            _ => examples,
        }
    }
}

/// What a cell's aimed cuts hit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AimCounts {
    /// Cuts that were aimed.
    pub aimed: usize,
    /// Of them, cuts that found their write (the rest came unaimed at the wait's end).
    pub met: usize,
    /// Met cuts whose write was torn.
    pub torn: usize,
    /// Met cuts whose write landed in a table data file.
    pub in_data: usize,
    /// Met cuts whose write landed in a table data file and was torn.
    pub in_data_torn: usize,
    /// The longest wait.
    pub waited_ms_max: u64,
}

/// One database × settings × profile × fs.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DbCell {
    /// The database (`sqlite`, `postgres`, …, or `command` for `powercut run`).
    pub db: String,
    /// The version that ran.
    pub version: String,
    /// The settings (`key=value,…`, or `defaults`).
    pub settings: String,
    /// Lab profile.
    pub profile: String,
    /// Its honesty about flushes.
    pub honesty: String,
    /// File system.
    pub fs: String,
    /// Why losses are expected here (a negative-control setting, a disk that ignores flushes), if they are.
    pub expected_loss: Option<String>,
    /// The device's untorn unit: a write cut short tore only at multiples of it.
    pub untorn_bytes: u64,
    /// What the cuts were aimed at (`data-writes ≥ 8 KiB`), if they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aim: Option<String>,
    /// Every cut.
    pub cuts: Vec<DbCut>,
    /// Fresh databases made after a damaging cut.
    pub fresh_databases: u32,
    /// Seconds the cell took, stack and database making included.
    pub elapsed_s: f64,
}

impl DbCell {
    /// Transfers acknowledged, all cuts.
    pub fn acknowledged(&self) -> u64 {
        self.cuts.iter().map(|c| c.acknowledged).sum()
    }
    /// Acknowledged transfers lost, all cuts (each loss counted once: a damaged database is replaced).
    pub fn lost(&self) -> u64 {
        self.cuts.iter().map(DbCut::lost).sum()
    }
    /// Cuts after which the server did not recover.
    pub fn failed_recoveries(&self) -> usize {
        self.cuts.iter().filter(|c| c.failed_recovery()).count()
    }
    /// Cuts after which the data could not be read or the database's check failed.
    pub fn integrity_failures(&self) -> usize {
        self.cuts.iter().filter(|c| c.integrity_failed()).count()
    }
    /// Cuts after which an invariant was broken.
    pub fn invariant_failures(&self) -> usize {
        self.cuts.iter().filter(|c| c.invariant_broken()).count()
    }
    /// Cuts with any damage.
    pub fn damaged_cuts(&self) -> usize {
        self.cuts.iter().filter(|c| c.damaged()).count()
    }
    /// Cuts per minute of the cell's wall time.
    pub fn cuts_per_min(&self) -> f64 {
        if self.elapsed_s > 0.0 { self.cuts.len() as f64 * 60.0 / self.elapsed_s } else { 0.0 }
    }
    /// Aimed cuts, and of them: met, torn, landed in table data.
    pub fn aim_counts(&self) -> AimCounts {
        let aimed: Vec<&AimedCut> = self.cuts.iter().filter_map(|c| c.aim.as_ref()).collect();
        let met = || aimed.iter().filter(|a| a.met);
        AimCounts {
            aimed: aimed.len(),
            met: met().count(),
            torn: met().filter(|a| a.torn).count(),
            in_data: met().filter(|a| a.landed_in == Some(super::aim::FileRole::Data)).count(),
            in_data_torn: met().filter(|a| a.torn && a.landed_in == Some(super::aim::FileRole::Data)).count(),
            waited_ms_max: aimed.iter().map(|a| a.waited_ms).max().unwrap_or(0),
        }
    }
    /// With `--aim`: what the aim hit, in words ("unaimed" cuts counted, never mixed in silently).
    pub fn aim_words(&self) -> Option<String> {
        let aim = self.aim.as_ref()?;
        let n = self.aim_counts();
        let missed = n.aimed - n.met;
        // `powercut run` knows no file layout: where its writes landed is not classified.
        let mut words = match self.db.as_str() {
            "command" => format!("aimed at {aim}: {} of {} met ({} torn)", n.met, n.aimed, n.torn),
            _ => format!(
                "aimed at {aim}: {} of {} met ({} in table data, {} torn, {} torn in table data)",
                n.met, n.aimed, n.in_data, n.torn, n.in_data_torn
            ),
        };
        if missed > 0 {
            words += &format!(", {missed} cut unaimed after {} ms", n.waited_ms_max);
        }
        Some(words)
    }
    /// Damage where nothing says to expect it.
    pub fn unexpected_damage(&self) -> bool {
        self.expected_loss.is_none() && self.damaged_cuts() > 0
    }
    /// One line: what the cuts showed, and whether that is what the settings and the disk promise.
    pub fn verdict(&self) -> String {
        let (bad, n) = (self.damaged_cuts(), self.cuts.len());
        let pct = 100.0 * bad as f64 / n.max(1) as f64;
        let what = self.damage_words();
        match (bad, &self.expected_loss) {
            (_, _) if n == 0 => "no cut finished".to_string(),
            (0, None) => {
                format!("holds: every acknowledged write kept in {n} cuts, every recovery and integrity check passed")
            }
            (0, Some(why)) => format!("no loss seen in {n} cuts, though expected: {why}"),
            (_, Some(why)) => format!("loses as expected in {bad} of {n} cuts ({pct:.0}%): {what}; {why}"),
            (_, None) => format!("FAILS in {bad} of {n} cuts ({pct:.0}%): {what}"),
        }
    }
    fn damage_words(&self) -> String {
        let mut parts = Vec::new();
        let lossy = self.cuts.iter().filter(|c| c.lost() > 0).count();
        if lossy > 0 {
            parts.push(format!("{} acknowledged lost in {lossy} cuts", self.lost()));
        }
        for (count, words) in [
            (self.failed_recoveries(), "failed recoveries"),
            (self.integrity_failures(), "integrity failures"),
            (self.invariant_failures(), "broken invariants"),
        ] {
            if count > 0 {
                parts.push(format!("{count} {words}"));
            }
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn cut(acknowledged: u64, lost: u64) -> DbCut {
        let verification = DbVerification { acknowledged, present: acknowledged - lost, lost, ..Default::default() };
        DbCut {
            acknowledged,
            verification: Some(verification),
            integrity: Some(IntegrityResult { ok: true, detail: "ok".into() }),
            ..DbCut::default()
        }
    }

    fn cell(expected: Option<&str>, cuts: Vec<DbCut>) -> DbCell {
        DbCell {
            db: "sqlite".into(),
            expected_loss: expected.map(String::from),
            cuts,
            elapsed_s: 30.0,
            ..DbCell::default()
        }
    }

    #[test]
    fn aimed_cuts_are_counted_by_what_they_hit_and_an_unaimed_cut_is_never_mixed_in() {
        use crate::proof::powercut::db::aim::FileRole;
        let aimed = |met: bool, torn: bool, landed_in: Option<FileRole>, waited_ms: u64| DbCut {
            aim: Some(AimedCut { met, torn, landed_in, waited_ms, ..AimedCut::default() }),
            ..cut(10, 0)
        };
        let mut c = cell(
            None,
            vec![
                aimed(true, true, Some(FileRole::Data), 40),
                aimed(true, false, Some(FileRole::Data), 300),
                aimed(true, true, Some(FileRole::Log), 20),
                aimed(true, true, None, 20),
                aimed(false, false, None, 5000),
            ],
        );
        assert_eq!(c.aim_words(), None, "a cell without --aim says nothing of it");
        c.aim = Some("data writes >= 8 KiB".into());
        let n = c.aim_counts();
        assert_eq!((n.aimed, n.met, n.torn, n.in_data, n.in_data_torn), (5, 4, 3, 2, 1));
        assert_eq!(
            c.aim_words().unwrap(),
            "aimed at data writes >= 8 KiB: 4 of 5 met (2 in table data, 3 torn, 1 torn in table data), \
             1 cut unaimed after 5000 ms"
        );
        c.db = "command".into();
        assert_eq!(
            c.aim_words().unwrap(),
            "aimed at data writes >= 8 KiB: 4 of 5 met (3 torn), 1 cut unaimed after 5000 ms"
        );
    }

    #[test]
    fn a_cells_verdict_names_the_damage_and_whether_it_was_expected() {
        let clean = cell(None, vec![cut(10, 0), cut(20, 0)]);
        assert!(clean.verdict().starts_with("holds") && !clean.unexpected_damage());
        assert_eq!((clean.acknowledged(), clean.cuts_per_min()), (30, 4.0));

        let mut broken = cut(5, 0);
        broken.integrity = Some(IntegrityResult { ok: false, detail: "*** in database main ***".into() });
        let failing = cell(
            None,
            vec![cut(10, 2), broken, DbCut { recovery_failure: Some(RecoveryFailure::default()), ..cut(1, 0) }],
        );
        assert!(failing.unexpected_damage());
        assert_eq!(
            failing.verdict(),
            "FAILS in 3 of 3 cuts (100%): 2 acknowledged lost in 1 cuts, 1 failed recoveries, 1 integrity failures"
        );

        let control = cell(Some("SQLite synchronous=OFF never syncs"), vec![cut(10, 3), cut(10, 0)]);
        assert!(!control.unexpected_damage());
        assert!(control.verdict().starts_with("loses as expected in 1 of 2 cuts (50%)"), "{}", control.verdict());
        assert!(cell(Some("x"), vec![cut(1, 0)]).verdict().starts_with("no loss seen in 1 cuts"));
        assert_eq!(cell(None, Vec::new()).verdict(), "no cut finished");
    }
}
