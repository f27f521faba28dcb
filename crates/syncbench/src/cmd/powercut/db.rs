//! `powercut db` and `powercut run`: the checks of their flags (one line, exit 2, before anything is made),
//! the campaign, and the table and exports, printed marked partial if Ctrl-C or SIGTERM stops it.

use crate::core::exit::{Outcome, usage};
use std::process::ExitCode;

/// Flags of `powercut db`.
#[derive(Debug, clap::Args)]
pub struct DbArgs {
    /// The database (its installed programs are used; a fresh database is made on each lab disk).
    #[arg(long, value_enum)]
    pub db: crate::proof::powercut::db::DbKind,
    /// Settings, KEY=VALUE comma-separated (sqlite: journal_mode=WAL|DELETE, synchronous=FULL|EXTRA|NORMAL|OFF,
    /// busy_timeout=MS); may be repeated, the last value of a key wins. Default: the database's defaults.
    #[arg(long = "set", value_name = "KEY=VALUE[,...]")]
    pub set: Vec<String>,
    /// Lab profiles, comma-separated (see `syncbench lab profiles`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub profile: Vec<String>,
    /// File systems, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ext4,xfs")]
    pub fs: Vec<crate::proof::lab::profile::LabFs>,
    /// Power cuts per profile × fs.
    #[arg(long, default_value_t = 10)]
    pub cuts: u32,
    /// Seed of the cut moments, what each cut keeps, and the transfers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Client connections, each a thread sending transfers.
    #[arg(long, default_value_t = 8)]
    pub clients: u32,
    /// The device's untorn unit on every profile (512B, 4KiB, 16KiB, ...): a write the cut catches in flight
    /// reaches the medium in whole aligned units of this size, the rest of it lost. Default: the profile's
    /// (512B).
    #[arg(long = "untorn", value_name = "SIZE", value_parser = crate::proof::lab::profile::parse_untorn)]
    pub untorn_bytes: Option<u64>,
    /// Aim every cut: wait (up to 5 s, the load running on) for a write of at least the database's page
    /// (PostgreSQL 8 KiB, InnoDB 16 KiB, SQLite and etcd 4 KiB) and cut the power while it is in flight:
    /// `data-writes`, one that does not continue a recent write (not a log append); `data-files`, one that
    /// touches a table data file (FIEMAP map taken after the database is made and after each reboot).
    /// Where it landed (table data, log, elsewhere) is recorded; a cut whose write did not come is counted
    /// as unaimed.
    #[arg(long, value_enum, value_name = "AT")]
    pub aim: Option<crate::proof::powercut::db::aim::AimAt>,
    /// Where the table goes besides the screen.
    #[command(flatten)]
    pub exports: super::TableExports,
}

/// Flags of `powercut run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Lab profiles, comma-separated (see `syncbench lab profiles`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub profile: Vec<String>,
    /// File systems, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ext4")]
    pub fs: Vec<crate::proof::lab::profile::LabFs>,
    /// Power cuts per profile × fs.
    #[arg(long, default_value_t = 10)]
    pub cuts: u32,
    /// Seed of the cut moments and of what each cut keeps.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The device's untorn unit on every profile (512B, 4KiB, 16KiB, ...), as for `powercut db`.
    #[arg(long = "untorn", value_name = "SIZE", value_parser = crate::proof::lab::profile::parse_untorn)]
    pub untorn_bytes: Option<u64>,
    /// Aim every cut at a write of at least `--page` bytes in flight that does not continue a recent write
    /// (up to 5 s; a cut whose write did not come is counted as unaimed).
    #[arg(long, value_enum, value_name = "AT")]
    pub aim: Option<crate::proof::powercut::db::aim::AimAt>,
    /// The program's page for `--aim data-writes` (512B to 1MiB, a power of two).
    #[arg(long, value_name = "SIZE", default_value = "4KiB", value_parser = crate::proof::powercut::db::aim::parse_page)]
    pub page: u64,
    /// The server, run by `sh -c` in the foreground in $SYNCBENCH_DIR (a directory on the lab mount);
    /// started before the first load and again after each cut. Optional.
    #[arg(long, value_name = "CMD")]
    pub start: Option<String>,
    /// The writer, run by `sh -c` in $SYNCBENCH_DIR: prints `ack KEY` for each write its program
    /// acknowledged; killed when the power goes.
    #[arg(long, value_name = "CMD")]
    pub load: String,
    /// The checker, run by `sh -c` in $SYNCBENCH_DIR after each cut and restart: reads the acknowledged keys
    /// (one a line) on stdin, exits non-zero on a loss (`lost KEY` lines on stdout are counted).
    #[arg(long, value_name = "CMD")]
    pub verify: String,
    /// Where the table goes besides the screen.
    #[command(flatten)]
    pub exports: super::TableExports,
}

#[cfg(not(feature = "fuse"))]
pub fn db(_a: DbArgs) -> Outcome {
    Err(usage(
        "this syncbench was built without FUSE support, which powercut db needs; rebuild with the default features",
    ))
}

#[cfg(not(feature = "fuse"))]
pub fn run(_a: RunArgs) -> Outcome {
    Err(usage(
        "this syncbench was built without FUSE support, which powercut run needs; rebuild with the default features",
    ))
}

/// Where the results go.
#[cfg(feature = "fuse")]
#[derive(Clone)]
struct Exports {
    seed: u64,
    to: super::TableExports,
}

#[cfg(feature = "fuse")]
impl Exports {
    /// Print the table (unless the JSON goes to stdout) and write the exports.
    fn write(&self, cells: &[crate::proof::powercut::db::cell::DbCell], partial: bool) -> anyhow::Result<()> {
        use crate::proof::powercut::db::render;
        self.to.write(
            &render::table(cells, partial),
            || Ok(render::json(self.seed, cells, partial)?),
            || render::markdown(cells, partial),
        )
    }
}

/// Profiles by name, and the lab's prerequisites for these file systems; each refusal one line.
#[cfg(feature = "fuse")]
pub(super) fn lab_inputs(
    profiles: &[String],
    fss: &[crate::proof::lab::profile::LabFs],
    cuts: u32,
    what: &str,
) -> anyhow::Result<Vec<crate::proof::lab::profile::Profile>> {
    let profiles = profiles
        .iter()
        .map(|p| crate::proof::lab::profile::by_name(p).map_err(usage))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if cuts == 0 {
        return Err(usage("--cuts must be at least 1"));
    }
    let mut missing = crate::proof::lab::prereq::missing_for_command();
    missing.extend(fss.iter().filter_map(|fs| crate::proof::lab::prereq::missing_for_case(fs.case())));
    if !missing.is_empty() {
        return Err(usage(format!("{what} cannot run: missing {}", missing.join("; "))));
    }
    Ok(profiles)
}

/// Run a campaign with the partial report on Ctrl-C, then report; exit 1 on unexpected damage.
#[cfg(feature = "fuse")]
fn report_campaign(
    exports: Exports,
    campaign: impl FnOnce(&crate::proof::powercut::db::campaign::CellStore) -> anyhow::Result<()>,
) -> Outcome {
    use crate::proof::powercut::db::campaign::CellStore;
    let store = CellStore::default();
    {
        let (store, exports) = (store.clone(), exports.clone());
        crate::core::cleanup::on_signal(move || {
            if let Some(cells) = store.snapshot() {
                let _ = exports.write(&cells, true);
            }
        });
    }
    let result = campaign(&store);
    crate::core::cleanup::stop_if_interrupted();
    let cells = store.finish();
    result?;
    exports.write(&cells, false)?;
    Ok(if cells.iter().any(|c| c.unexpected_damage()) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

#[cfg(feature = "fuse")]
pub fn db(a: DbArgs) -> Outcome {
    use crate::proof::powercut::db::{self as pdb, campaign, controls, render};
    let mut settings = Vec::new();
    for item in &a.set {
        settings.extend(controls::parse_settings(item).map_err(usage)?);
    }
    if !(1..=255).contains(&a.clients) {
        return Err(usage(format!("--clients must be 1 to 255 (got {})", a.clients)));
    }
    let profiles = lab_inputs(&a.profile, &a.fs, a.cuts, "powercut db")?;
    // The driver checks its settings and finds its programs now, before any disk is made.
    let server = pdb::server_for(a.db, &settings).map_err(usage)?;
    eprintln!("syncbench: {} with {}", server.version(), controls::settings_text(&settings));
    drop(server);
    let plan = campaign::DbPlan {
        kind: a.db,
        settings,
        profiles,
        fss: a.fs.clone(),
        cuts: a.cuts,
        seed: a.seed,
        clients: a.clients,
        accounts: pdb::workload::DEFAULT_ACCOUNTS,
        untorn_bytes: a.untorn_bytes,
        aim: a.aim,
    };
    let exports = Exports { seed: a.seed, to: a.exports.clone() };
    report_campaign(exports, |store| {
        campaign::run(&plan, store, |cell, cut| eprintln!("{}", render::progress(cell, cut))).map(drop)
    })
}

#[cfg(feature = "fuse")]
pub fn run(a: RunArgs) -> Outcome {
    use crate::proof::powercut::db::{command, render};
    let profiles = lab_inputs(&a.profile, &a.fs, a.cuts, "powercut run")?;
    if a.aim == Some(crate::proof::powercut::db::aim::AimAt::DataFiles) {
        return Err(usage("--aim data-files needs a database's file layout; powercut run takes --aim data-writes"));
    }
    for (flag, cmd) in [("--load", Some(&a.load)), ("--verify", Some(&a.verify)), ("--start", a.start.as_ref())] {
        if cmd.is_some_and(|c| c.trim().is_empty()) {
            return Err(usage(format!("{flag} is empty; give a shell command")));
        }
    }
    let plan = command::CommandPlan {
        profiles,
        fss: a.fs.clone(),
        cuts: a.cuts,
        seed: a.seed,
        start: a.start.clone(),
        load: a.load.clone(),
        verify: a.verify.clone(),
        untorn_bytes: a.untorn_bytes,
        aim_bytes: a.aim.map(|_| a.page),
    };
    let exports = Exports { seed: a.seed, to: a.exports.clone() };
    report_campaign(exports, |store| {
        command::run(&plan, store, |cell, cut| eprintln!("{}", render::progress(cell, cut))).map(drop)
    })
}

#[cfg(test)]
mod tests;
