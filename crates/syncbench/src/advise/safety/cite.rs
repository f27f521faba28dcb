//! Matching the recorded power cuts to a piece of advice (the rules in the module doc of `safety`), and
//! the sentences that cite them.

use super::{DEFAULTS, Design, POWERCUTS, PowercutRecord, TORN_PAGE_TESTS, TornPageTest};
use crate::advise::{Database, DatabaseAdvice, Setting, Version};
use crate::core::units::format_size;
use serde::{Deserialize, Serialize};

/// Records pooled into one citation: what ran, where, and what happened.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cited {
    /// The records' `--set` settings, each once: `defaults` or `key=value,…`.
    pub settings: Vec<String>,
    /// The versions that ran.
    pub ran: Vec<String>,
    /// The lab profiles.
    pub profiles: Vec<String>,
    /// The file systems.
    pub file_systems: Vec<String>,
    /// The lab disks' untorn units.
    pub untorn_bytes: Vec<u64>,
    /// Power cuts.
    pub cuts: u32,
    /// Cuts with any damage.
    pub damaged: u32,
    /// Cuts that lost acknowledged commits (`null`: not recorded for every record pooled).
    pub lost_ack_cuts: Option<u32>,
    /// Cuts after which the server did not recover (`null`: not recorded for every record pooled).
    pub failed_recoveries: Option<u32>,
    /// Cuts whose integrity check failed (`null`: not recorded for every record pooled).
    pub integrity_failures: Option<u32>,
    /// Cuts of the first design (the server killed before the cut: a weaker cut).
    pub kill_first_cuts: u32,
    /// When.
    pub dates: Vec<String>,
    /// The raw output, under bench/results/.
    pub results: Vec<String>,
}

/// The power-cut evidence behind one setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingPowerCuts {
    /// The setting's name.
    pub name: String,
    /// The advised value.
    pub value: String,
    /// The cuts that ran this value with advise's other durability settings; `null` when none did.
    pub advised: Option<Cited>,
    /// Other values of this setting that were cut on purpose, each with the settings it ran.
    pub other_values: Vec<Cited>,
    /// The sentence appended to the setting's reason.
    pub text: String,
}

/// The power-cut evidence behind one database's advice, as `advise --json` gives it (`power_cuts`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerCutEvidence {
    /// `postgres`, …
    pub database: String,
    /// The version advised for.
    pub version: String,
    /// Whether the records are of that version's release series (else they are named as another's).
    pub applies: bool,
    /// The cuts that ran advise's durability settings together; `null` when none did.
    pub advised: Option<Cited>,
    /// The same settings on a disk that ignores flushes: expected to lose.
    pub lying_disk: Option<Cited>,
    /// Settings advise does not give, cut on purpose (negative controls and alternatives).
    pub other_settings: Vec<Cited>,
    /// Per setting, in the advice's order.
    pub settings: Vec<SettingPowerCuts>,
    /// The database's line: "advise's settings kept every acknowledged commit in …".
    pub summary: String,
}

/// The power-cut evidence of a piece of advice (from its database, version and settings).
pub fn of(advice: &DatabaseAdvice) -> PowerCutEvidence {
    of_records(advice, POWERCUTS.iter().collect())
}

/// [`of`] over these records instead of [`POWERCUTS`].
pub(super) fn of_records(advice: &DatabaseAdvice, all: Vec<&'static PowercutRecord>) -> PowerCutEvidence {
    let target = Database::parse(&advice.database).zip(Version::parse(&advice.version));
    let Some((db, version)) = target else {
        return nothing(advice);
    };
    let (records, applies) = records_for(all, db, version);
    let matching = Matching { db, advice, records };
    let advised = pool(&matching.filtered(|r, dev| honest(r) && dev.is_empty()));
    let lying_disk = pool(&matching.filtered(|r, dev| !honest(r) && dev.is_empty()));
    let advised_keys: Vec<&str> = advice.settings.iter().map(|s| s.name.as_str()).collect();
    let other_settings = group(&matching.filtered(|r, dev| {
        honest(r) && !dev.is_empty() && on_purpose(r, dev) && !dev.iter().any(|k| advised_keys.contains(k))
    }));
    let differs = (!applies).then_some(version);
    let settings = advice.settings.iter().map(|s| setting(&matching, s, differs)).collect();
    let mut e = PowerCutEvidence {
        database: advice.database.clone(),
        version: advice.version.clone(),
        applies,
        advised,
        lying_disk,
        other_settings,
        settings,
        summary: String::new(),
    };
    e.summary = summary(db, version, &e, !matching.records.is_empty());
    e
}

/// Appends each setting's power-cut sentence to its reason.
pub fn annotate(advice: &mut DatabaseAdvice) {
    // A pass/fail rule's (etcd's) "setting" is its measured verdict, not a value to set: the database's
    // power-cut line covers it.
    if advice.pass.is_some() {
        return;
    }
    let evidence = of(advice);
    for (s, cuts) in advice.settings.iter_mut().zip(evidence.settings) {
        s.reason.push(' ');
        s.reason.push_str(&cuts.text);
    }
}

/// What the torn-page tests of `setting` showed, as a sentence for the torn-page advice.
pub fn torn_page_tests(database: Database, version: Version, setting: &str) -> String {
    let tests: Vec<&TornPageTest> =
        TORN_PAGE_TESTS.iter().filter(|t| t.database == database && t.setting == setting).collect();
    if tests.is_empty() {
        return format!("No torn-page power-cut test of {setting} is recorded yet.");
    }
    let same: Vec<&TornPageTest> = tests.iter().copied().filter(|t| same_series(database, t.ran, version)).collect();
    let (shown, lead) = match same.is_empty() {
        true => (tests, format!("No torn-page power-cut test of {} {version}. ", database.title())),
        false => (same, String::new()),
    };
    lead + &shown.iter().map(|t| torn_sentence(t)).collect::<Vec<_>>().join(" ")
}

fn torn_sentence(t: &TornPageTest) -> String {
    let aimed =
        if t.aimed { "cuts aimed at data-page writes" } else { "cuts at seeded moments, not aimed at page writes" };
    format!(
        "Torn-page test ({} {}, lab disk {} × {} with a {} untorn unit, {aimed}; {}): {}={} {} in {} of {} cuts, \
         {} in {} of {} on the same seeds.",
        t.database.title(),
        t.ran,
        t.profile,
        t.file_system,
        format_size(t.untorn_bytes),
        t.date,
        t.setting,
        t.off,
        t.damage,
        t.off_damaged,
        t.cuts,
        t.on,
        t.on_damaged,
        t.cuts
    )
}

fn nothing(advice: &DatabaseAdvice) -> PowerCutEvidence {
    let settings = advice
        .settings
        .iter()
        .map(|s| SettingPowerCuts {
            name: s.name.clone(),
            value: s.value.clone(),
            advised: None,
            other_values: Vec::new(),
            text: no_evidence(s),
        })
        .collect();
    PowerCutEvidence {
        database: advice.database.clone(),
        version: advice.version.clone(),
        applies: false,
        advised: None,
        lying_disk: None,
        other_settings: Vec::new(),
        settings,
        summary: "no power-cut evidence".into(),
    }
}

fn no_evidence(s: &Setting) -> String {
    format!("Power cuts: no power-cut evidence for {} = {}.", s.name, s.value)
}

/// The records of `db` of the release series of `version`, and true; else all of `db`'s, and false.
fn records_for(
    all: Vec<&'static PowercutRecord>,
    db: Database,
    version: Version,
) -> (Vec<&'static PowercutRecord>, bool) {
    let all: Vec<&PowercutRecord> = all.into_iter().filter(|r| r.database == db).collect();
    let same: Vec<&PowercutRecord> = all.iter().copied().filter(|r| same_series(db, r.ran, version)).collect();
    if same.is_empty() { (all, false) } else { (same, true) }
}

/// Whether `ran` is of the release series of `version`: PostgreSQL's major, the others' major.minor.
pub(super) fn same_series(db: Database, ran: &str, version: Version) -> bool {
    Version::parse(ran)
        .is_some_and(|r| r.major == version.major && (db == Database::Postgres || r.minor == version.minor))
}

/// Whether every profile of the record keeps the flushes it acknowledges (not `cheating-ssd`).
fn honest(r: &PowercutRecord) -> bool {
    use crate::proof::lab::profile::{Honesty, by_name};
    r.profiles.iter().all(|p| by_name(p).is_ok_and(|p| p.params.honesty != Honesty::IgnoresFlush))
}

/// Whether the record set every key it deviates by (`--set`), rather than running another default.
fn on_purpose(r: &PowercutRecord, deviations: &[&str]) -> bool {
    deviations.iter().all(|k| r.settings.iter().any(|(key, _)| key.eq_ignore_ascii_case(k)))
}

/// The records of one database, matched against one piece of advice.
struct Matching<'a> {
    db: Database,
    advice: &'a DatabaseAdvice,
    records: Vec<&'static PowercutRecord>,
}

impl Matching<'_> {
    /// The records `keep` accepts, given each with its deviations.
    fn filtered(&self, keep: impl Fn(&PowercutRecord, &[&'static str]) -> bool) -> Vec<&'static PowercutRecord> {
        self.records.iter().copied().filter(|r| keep(r, &self.deviations(r))).collect()
    }

    /// The keys where the record ran another value than the advice gives (or, where it gives none, than
    /// the default): the database's durability keys and every key the record set.
    fn deviations(&self, r: &PowercutRecord) -> Vec<&'static str> {
        let durability = DEFAULTS.iter().filter(|(db, _, _, d)| *db == self.db && *d).map(|(_, k, _, _)| *k);
        let mut keys: Vec<&'static str> = durability.collect();
        for (key, _) in r.settings {
            if !keys.iter().any(|k| k.eq_ignore_ascii_case(key)) {
                keys.push(key);
            }
        }
        keys.into_iter().filter(|k| !same(effective(r, k), self.wanted(k))).collect()
    }

    /// The value the advice gives `key`, else the server's default.
    fn wanted(&self, key: &str) -> Option<&str> {
        let advised = self.advice.settings.iter().find(|s| s.name.eq_ignore_ascii_case(key));
        advised.map(|s| s.value.as_str()).or_else(|| default_of(self.db, key))
    }
}

/// The value the record ran for `key`: its own setting, else the default.
fn effective(r: &PowercutRecord, key: &str) -> Option<&'static str> {
    let set = r.settings.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| *v);
    set.or_else(|| default_of(r.database, key))
}

fn default_of(db: Database, key: &str) -> Option<&'static str> {
    DEFAULTS.iter().find(|(d, k, _, _)| *d == db && k.eq_ignore_ascii_case(key)).map(|(_, _, v, _)| *v)
}

fn same(a: Option<&str>, b: Option<&str>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
}

/// The evidence behind one advised setting.
fn setting(m: &Matching<'_>, s: &Setting, differs: Option<Version>) -> SettingPowerCuts {
    let runs_value = |r: &PowercutRecord| same(effective(r, &s.name), Some(&s.value));
    let advised = pool(&m.filtered(|r, dev| honest(r) && dev.is_empty() && runs_value(r)));
    let others = group(
        &m.filtered(|r, dev| honest(r) && on_purpose(r, dev) && dev.iter().any(|k| k.eq_ignore_ascii_case(&s.name))),
    );
    let lead = match (&advised, differs) {
        (Some(c), None) => format!("Power cuts: {}", cite(m.db, c, Some(version_of(m.advice)))),
        (Some(c), Some(v)) => {
            format!("Power cuts: no power-cut evidence for {} {v}; this value {}", m.db.title(), cite(m.db, c, None))
        }
        (None, _) => no_evidence(s).trim_end_matches('.').to_string(),
    };
    let mut text = lead;
    if !others.is_empty() {
        let each: Vec<String> =
            others.iter().map(|o| format!("{} {}", o.settings.join(" / "), cite(m.db, o, None))).collect();
        text.push_str(&format!("; other values: {}", each.join("; ")));
    }
    text.push('.');
    SettingPowerCuts { name: s.name.clone(), value: s.value.clone(), advised, other_values: others, text }
}

fn version_of(advice: &DatabaseAdvice) -> Version {
    Version::parse(&advice.version).unwrap_or(Version::new(0, 0))
}

/// The database's line: advise's settings together, the lying disk, the other settings cut.
fn summary(db: Database, version: Version, e: &PowerCutEvidence, any: bool) -> String {
    if !any {
        return format!("no power-cut evidence for {}", db.title());
    }
    let mut out = match (&e.advised, e.applies) {
        (Some(c), true) => format!("advise's settings {}", cite(db, c, Some(version))),
        (Some(c), false) => {
            format!("no power-cut evidence for {} {version}; advise's settings {}", db.title(), cite(db, c, None))
        }
        (None, true) => "no power-cut evidence for advise's settings together".to_string(),
        (None, false) => format!("no power-cut evidence for {} {version}", db.title()),
    };
    if let Some(c) = &e.lying_disk {
        out.push_str(&format!(
            "; with them, on a disk that acknowledges flushes it never makes (lab disks {}; {}), the database {}: \
             no setting survives such a disk",
            place(c),
            provenance(db, c, None),
            outcome(c)
        ));
    }
    if !e.other_settings.is_empty() {
        let each: Vec<String> =
            e.other_settings.iter().map(|o| format!("{} {}", o.settings.join(" / "), cite(db, o, None))).collect();
        out.push_str(&format!("; other settings: {}", each.join("; ")));
    }
    out
}

/// "kept every acknowledged commit in 150 cuts on lab disks hdd-7200, … × ext4, xfs (PostgreSQL 15.18,
/// syncbench powercut db 2026-11-28; …)". With `advised_for`, names it when no record ran that version.
fn cite(db: Database, c: &Cited, advised_for: Option<Version>) -> String {
    format!("{} on lab disks {} ({})", outcome(c), place(c), provenance(db, c, advised_for))
}

/// "hdd-7200, nvme-consumer × ext4, xfs", with the untorn unit when it is not the lab's default.
fn place(c: &Cited) -> String {
    let untorn: Vec<String> = c.untorn_bytes.iter().filter(|b| **b != 512).map(|b| format_size(*b)).collect();
    let untorn = if untorn.is_empty() { String::new() } else { format!(" with a {} untorn unit", untorn.join(", ")) };
    format!("{} × {}{untorn}", c.profiles.join(", "), c.file_systems.join(", "))
}

/// "PostgreSQL 15.18, syncbench powercut db 2026-11-28", and how many cuts were of the weaker design when
/// nothing was damaged (a cut that lost anyway needs no such note).
fn provenance(db: Database, c: &Cited, advised_for: Option<Version>) -> String {
    let mut ran = format!("{} {}", db.title(), c.ran.join(", "));
    if let Some(v) = advised_for.filter(|v| !c.ran.iter().any(|r| Version::parse(r) == Some(*v))) {
        ran.push_str(&format!(", not {v} itself"));
    }
    let mut note = String::new();
    if c.damaged == 0 && c.kill_first_cuts == c.cuts {
        note = "; the server killed before each cut, a weaker cut".into();
    } else if c.damaged == 0 && c.kill_first_cuts > 0 {
        note = format!("; {} of them killed the server before the cut, a weaker cut", c.kill_first_cuts);
    }
    format!("{ran}, syncbench powercut db {}{note}", c.dates.join(", "))
}

/// "kept every acknowledged commit in N cuts", or what the damage was.
fn outcome(c: &Cited) -> String {
    if c.damaged == 0 {
        return format!("kept every acknowledged commit in {} cuts", c.cuts);
    }
    let of = format!("{} of {} cuts", c.damaged, c.cuts);
    if c.lost_ack_cuts == Some(c.damaged) {
        return format!("lost acknowledged commits in {of}");
    }
    if c.failed_recoveries == Some(c.damaged) {
        return format!("failed recovery in {of}");
    }
    let kinds = [
        (c.lost_ack_cuts, "with acknowledged commits lost", "with acknowledged commits lost"),
        (c.failed_recoveries, "failed recovery", "failed recoveries"),
        (c.integrity_failures, "integrity failure", "integrity failures"),
    ];
    let parts: Vec<String> = kinds
        .iter()
        .filter_map(|(n, one, many)| n.filter(|n| *n > 0).map(|n| format!("{n} {}", if n == 1 { one } else { many })))
        .collect();
    match parts.is_empty() {
        true => format!("was damaged in {of}"),
        false => format!("was damaged in {of} ({})", parts.join(", ")),
    }
}

/// The records as one citation; `None` for none.
fn pool(records: &[&PowercutRecord]) -> Option<Cited> {
    let add = |a: Option<u32>, b: Option<u32>| Some(a? + b?);
    let mut c =
        Cited { lost_ack_cuts: Some(0), failed_recoveries: Some(0), integrity_failures: Some(0), ..Cited::default() };
    for r in records {
        push_new(&mut c.settings, settings_text(r));
        push_new(&mut c.ran, r.ran.to_string());
        r.profiles.iter().for_each(|p| push_new(&mut c.profiles, p.to_string()));
        r.file_systems.iter().for_each(|f| push_new(&mut c.file_systems, f.to_string()));
        push_new(&mut c.untorn_bytes, r.untorn_bytes);
        c.cuts += r.cuts;
        c.damaged += r.damaged;
        c.lost_ack_cuts = add(c.lost_ack_cuts, r.lost_ack_cuts);
        c.failed_recoveries = add(c.failed_recoveries, r.failed_recoveries);
        c.integrity_failures = add(c.integrity_failures, r.integrity_failures);
        c.kill_first_cuts += if r.design == Design::KillFirst { r.cuts } else { 0 };
        push_new(&mut c.dates, r.date.to_string());
        r.results.iter().for_each(|p| push_new(&mut c.results, p.to_string()));
    }
    (!records.is_empty()).then_some(c)
}

/// One citation per distinct `--set`, in the table's order.
fn group(records: &[&PowercutRecord]) -> Vec<Cited> {
    let mut keys: Vec<String> = Vec::new();
    records.iter().for_each(|r| push_new(&mut keys, settings_text(r)));
    keys.iter()
        .filter_map(|k| pool(&records.iter().copied().filter(|r| settings_text(r) == *k).collect::<Vec<_>>()))
        .collect()
}

/// `defaults`, or the record's `--set` as `key=value,…`.
pub(super) fn settings_text(r: &PowercutRecord) -> String {
    if r.settings.is_empty() {
        return "defaults".into();
    }
    r.settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}
