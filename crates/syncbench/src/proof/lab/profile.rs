//! The emulated disks: named profiles built from measured devices, and the overrides a user may apply.
//!
//! Flush costs come from published fdatasync rates (one ext4 fdatasync of an overwritten block is one write
//! plus one device flush): Percona, "Why Consumer SSD Reviews are Useless for Database Performance Use
//! Case" (2018; shared/seeds/001_*), and the pgsql-performance thread of 2010-11 showing one SATA disk with
//! its write cache on (≈1200 fdatasync/s, flushes not sent) and off (≈108/s) (shared/seeds/000_*).
//! Cache sizes, destage delays and the share of the cache destaged just before a cut are model choices,
//! not measurements: a real drive does not publish them.

use clap::ValueEnum;
use serde::Serialize;

/// What the device does with a flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Honesty {
    /// A volatile write cache; a flush makes everything acknowledged before it durable.
    Honest,
    /// No volatile cache: a write is durable when acknowledged (power-loss protection, battery-backed cache).
    WriteThrough,
    /// A volatile cache whose flushes are acknowledged at once and make nothing durable (the cheating SSD).
    IgnoresFlush,
}

impl Honesty {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Honesty::Honest => "honest",
            Honesty::WriteThrough => "write-through",
            Honesty::IgnoresFlush => "ignores-flush",
        }
    }
}

/// The file systems the lab makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LabFs {
    /// ext4, data=ordered.
    Ext4,
    /// XFS.
    Xfs,
    /// Btrfs.
    Btrfs,
    /// ext4 with 16 KiB clusters (bigalloc): 16 KiB-aligned file ranges at 16 KiB-aligned device offsets.
    Ext4Bigalloc,
}

impl LabFs {
    /// How the shared stack makes and mounts it.
    pub fn case(self) -> crate::proof::lab::cases::FsCase {
        use crate::proof::lab::cases::FsCase;
        match self {
            LabFs::Ext4 => FsCase::Ext4,
            LabFs::Xfs => FsCase::Xfs,
            LabFs::Btrfs => FsCase::Btrfs,
            LabFs::Ext4Bigalloc => FsCase::Ext4Bigalloc,
        }
    }
}

/// Everything the device model needs to know.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct DeviceParams {
    /// Flush honesty.
    pub honesty: Honesty,
    /// Fixed cost of one flush (rotation, FTL journal commit), in addition to transferring the dirty data.
    pub flush_ns: u64,
    /// Fixed latency of one write (command overhead; a cache hit).
    pub write_ns: u64,
    /// Media bandwidth in bytes per second; `None` for unlimited.
    pub bandwidth_bytes_per_s: Option<u64>,
    /// Volatile cache capacity: beyond it, the device destages in the background.
    pub cache_bytes: u64,
    /// Acknowledged writes older than this are destaged in the background; `None` for never.
    pub destage_after_ns: Option<u64>,
    /// Percent of the cached writes that reached the medium just before a power cut.
    pub destaged_at_cut_percent: u64,
    /// The device's untorn unit: a write cut short by a power cut reached the medium in whole aligned
    /// units of this size (each all-old or all-new), never in part of one. 512 (a sector) unless the
    /// profile promises more, as AWS's torn-write prevention does with 16 KiB. Absent in the state of a lab
    /// started before the option: 512, what those labs did.
    #[serde(default = "sector_bytes")]
    pub untorn_bytes: u64,
}

/// The unit of the device model's cache, and the smallest untorn unit.
pub const SECTOR_BYTES: u64 = 512;

fn sector_bytes() -> u64 {
    SECTOR_BYTES
}

/// The untorn units a device may have: a power of two from one sector to 1 MiB.
const UNTORN_MAX_BYTES: u64 = 1 << 20;

/// `--untorn 512B|4KiB|16KiB|…`: the untorn unit in bytes, or a one-line reason.
pub fn parse_untorn(text: &str) -> Result<u64, String> {
    let bytes = crate::core::units::parse_size(text)
        .ok_or_else(|| format!("{text:?} is not a size; use e.g. 512B, 4KiB or 16KiB"))?;
    let sector = SECTOR_BYTES;
    if !bytes.is_power_of_two() || !(sector..=UNTORN_MAX_BYTES).contains(&bytes) {
        return Err(format!("the untorn unit must be a power of two from 512B to 1MiB (e.g. 4KiB, 16KiB), not {text}"));
    }
    Ok(bytes)
}

impl DeviceParams {
    /// Time to move `bytes` over the media channel.
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        self.bandwidth_bytes_per_s.map_or(0, |bw| (bytes as u128 * 1_000_000_000 / bw as u128) as u64)
    }
}

/// One named profile.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    /// Name used with `--profile`.
    pub name: &'static str,
    /// The device class.
    pub class: &'static str,
    /// The device parameters.
    pub params: DeviceParams,
    /// Where the numbers come from.
    pub source: &'static str,
}

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const MB: u64 = 1_000_000;
const MIB: u64 = 1 << 20;

fn params(honesty: Honesty, flush_us: u64, write_us: u64, bandwidth_mb_s: u64, cache_mib: u64) -> DeviceParams {
    DeviceParams {
        honesty,
        flush_ns: flush_us * US,
        write_ns: write_us * US,
        bandwidth_bytes_per_s: Some(bandwidth_mb_s * MB),
        cache_bytes: cache_mib * MIB,
        destage_after_ns: Some(100 * MS),
        destaged_at_cut_percent: 25,
        untorn_bytes: sector_bytes(),
    }
}

/// Every profile, in the order `lab profiles` lists them.
pub fn all() -> Vec<Profile> {
    vec![
        Profile {
            name: "hdd-7200",
            class: "7200 rpm SATA disk, write cache on",
            params: params(Honesty::Honest, 8_500, 50, 150, 64),
            source: "WD2502ABYS 7200 rpm: 118 fdatasync/s = 8.5 ms (Percona 2018, seeds/001); \
                     ~150 MB/s sequential",
        },
        Profile {
            name: "sata-ssd-consumer",
            class: "consumer SATA SSD, no power-loss protection",
            params: params(Honesty::Honest, 3_000, 30, 500, 256),
            source: "Samsung MZ7LN512: 333 fdatasync/s = 3.0 ms (Percona 2018, seeds/001); SATA 500 MB/s",
        },
        Profile {
            name: "nvme-consumer",
            class: "consumer NVMe SSD, no power-loss protection",
            params: params(Honesty::Honest, 1_400, 20, 2_000, 512),
            source: "Samsung 960 PRO: 714 fdatasync/s = 1.4 ms, 267 fsync/s (Percona 2018, seeds/001)",
        },
        Profile {
            name: "nvme-plp",
            class: "enterprise NVMe with power-loss protection (write-through in effect)",
            params: params(Honesty::WriteThrough, 20, 50, 2_000, 0),
            source: "Intel PC-3700 (DC P3700): 7380 fsync/s = 0.14 ms (Percona 2018, seeds/001)",
        },
        Profile {
            name: "raid-bbu",
            class: "RAID controller with battery-backed cache",
            params: params(Honesty::WriteThrough, 0, 20, 1_000, 0),
            source: "Dell PERC with BBU: 23000 fsync/s = 0.04 ms (Percona 2018, seeds/001)",
        },
        Profile {
            name: "cheating-ssd",
            class: "SSD that acknowledges flushes without persisting",
            params: DeviceParams {
                destage_after_ns: Some(2_000 * MS),
                ..params(Honesty::IgnoresFlush, 0, 300, 1_000, 512)
            },
            source: "Intel PC-3100: 1274 fsync/s = 0.79 ms, no power-loss protection, \"obviously cheating\" \
                     (Percona 2018, seeds/001); a SATA disk not sent flushes: 1200/s vs 108/s (seeds/000)",
        },
        Profile {
            name: "ssd-200us",
            class: "reference disk for group commit: 200 µs flush",
            params: params(Honesty::Honest, 200, 20, 1_000, 256),
            source: "the group-commit goal's reference disk (issue 17): flush 200 µs",
        },
        Profile {
            name: "zero",
            class: "no added latency: the stack's own cost",
            params: DeviceParams { bandwidth_bytes_per_s: None, ..params(Honesty::Honest, 0, 0, 1, 1024) },
            source: "none: measures FUSE + loop + the model",
        },
    ]
}

/// The stack's own cost per request kind: what FUSE, the loop device and the model add to every profile's
/// numbers, with the default [`crate::proof::lab::stack::StackTuning`]. Recorded from a bench run, not
/// measured at `lab up`: one measurement at `up` would be a single round on a machine whose load swings it
/// 2-4x, and `lab profiles` needs neither root nor a lab.
#[derive(Clone, Debug, Serialize)]
pub struct StackCost {
    /// One 8 KiB O_DIRECT write through the stack, median µs (`run --methods direct` on `zero`).
    pub write_us: u64,
    /// One flush: (8 KiB O_DIRECT write + fdatasync) − (the write alone), median µs.
    pub flush_us: u64,
    /// 8 KiB buffered write + fdatasync on `zero`, median µs: the fastest commit the lab can stand for.
    pub commit_8k_us: u64,
    /// How, when and under what load it was measured.
    pub measured: &'static str,
}

/// The stack's own cost as bench/lab_cpu_idle.sh last measured it (docs/benchmarks.md, "lab stack cost").
pub const STACK_COST: StackCost = StackCost {
    write_us: 20,
    flush_us: 25,
    commit_8k_us: 46,
    measured: "bench/lab_cpu_idle.sh, 2026-11-29 05:48-05:50 UTC, 8 alternating rounds, ext4 on `zero`, \
               2 vCPUs at load 1.0-1.5, idle CPUs polling (the default; 85 µs when they halt)",
};

/// The profile called `name`, or a one-line error listing the names.
pub fn by_name(name: &str) -> Result<Profile, String> {
    all().into_iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = all().iter().map(|p| p.name).collect();
        format!("unknown lab profile {name:?}; choose one of {}", names.join(", "))
    })
}

/// The image exactly as the kernel wrote it: no latency, no volatile cache (what `fsync-errors` runs on:
/// it reads the image file to see what reached the "disk").
pub fn pass_through() -> DeviceParams {
    DeviceParams { honesty: Honesty::WriteThrough, ..by_name("zero").expect("zero is a profile").params }
}

/// User overrides of a profile's numbers (also what `lab set` changes on a running lab).
#[derive(Clone, Copy, Debug, Default, PartialEq, clap::Args, Serialize, serde::Deserialize)]
pub struct Overrides {
    /// Override the profile's flush cost, in microseconds.
    #[arg(long, value_name = "US")]
    pub flush_us: Option<u64>,
    /// Override the profile's per-write latency, in microseconds.
    #[arg(long, value_name = "US")]
    pub write_us: Option<u64>,
    /// Override the profile's honesty about flushes.
    #[arg(long, value_enum)]
    pub honesty: Option<Honesty>,
    /// The device's untorn unit: a write cut short by a power cut tears only at boundaries of this size
    /// (512B, the default, 4KiB, 16KiB as AWS's torn-write prevention promises, or any power of two up to
    /// 1MiB).
    #[arg(long = "untorn", value_name = "SIZE", value_parser = parse_untorn)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untorn_bytes: Option<u64>,
}

impl Overrides {
    /// Whether nothing is overridden.
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }

    /// `params` with these overrides applied.
    pub fn apply(&self, mut params: DeviceParams) -> DeviceParams {
        if let Some(us) = self.flush_us {
            params.flush_ns = us * US;
        }
        if let Some(us) = self.write_us {
            params.write_ns = us * US;
        }
        if let Some(h) = self.honesty {
            params.honesty = h;
        }
        if let Some(bytes) = self.untorn_bytes {
            params.untorn_bytes = bytes;
        }
        params
    }
}

/// The emulated disk and its file system.
#[derive(Clone, Debug, clap::Args)]
pub struct DiskArgs {
    /// The emulated disk (see `syncbench lab profiles`).
    #[arg(long, value_name = "PROFILE")]
    pub profile: String,
    /// The file system made on it.
    #[arg(long, value_enum, default_value = "ext4")]
    pub fs: LabFs,
    /// Size of the disk (a sparse image file in the temporary directory; at least 320MiB for xfs).
    #[arg(long, default_value = "4GiB")]
    pub size: String,
    /// Seed of the device's background destaging order.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Overrides of the profile's numbers.
    #[command(flatten)]
    pub overrides: Overrides,
}

/// `honest, flush 200 µs, write 20 µs` (and `, untorn 16 KiB` when the unit is larger than a sector).
pub fn describe(p: &DeviceParams) -> String {
    let mut text = format!("{}, flush {} µs, write {} µs", p.honesty.name(), p.flush_ns / 1000, p.write_ns / 1000);
    if p.untorn_bytes > SECTOR_BYTES {
        text.push_str(&format!(", untorn {}", crate::core::units::format_size(p.untorn_bytes)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let all = all();
        for p in &all {
            assert_eq!(by_name(p.name).unwrap().name, p.name);
            assert_eq!(all.iter().filter(|q| q.name == p.name).count(), 1);
        }
        assert!(by_name("floppy").unwrap_err().contains("hdd-7200"));
    }

    #[test]
    fn transfer_time_follows_bandwidth() {
        let p = by_name("hdd-7200").unwrap().params;
        assert_eq!(p.transfer_ns(150 * MB), 1_000_000_000);
        assert_eq!(by_name("zero").unwrap().params.transfer_ns(1 << 30), 0);
    }

    #[test]
    fn overrides_replace_only_what_is_given() {
        let base = by_name("ssd-200us").unwrap().params;
        let o = Overrides { flush_us: Some(5), honesty: Some(Honesty::IgnoresFlush), ..Overrides::default() };
        let p = o.apply(base.clone());
        assert_eq!((p.flush_ns, p.write_ns, p.honesty), (5_000, base.write_ns, Honesty::IgnoresFlush));
        assert_eq!(p.untorn_bytes, 512, "every profile tears at sectors unless told otherwise");
        let p = Overrides { untorn_bytes: Some(16 << 10), ..Overrides::default() }.apply(base);
        assert_eq!(p.untorn_bytes, 16 << 10);
    }

    #[test]
    fn untorn_units_are_powers_of_two_from_a_sector_to_a_mebibyte() {
        assert_eq!(parse_untorn("512B"), Ok(512));
        assert_eq!(parse_untorn("4KiB"), Ok(4096));
        assert_eq!(parse_untorn("16KiB"), Ok(16384));
        assert!(parse_untorn("256B").unwrap_err().contains("power of two from 512B"));
        assert!(parse_untorn("12KiB").unwrap_err().contains("power of two"));
        assert!(parse_untorn("2MiB").unwrap_err().contains("to 1MiB"));
        assert!(parse_untorn("big").unwrap_err().contains("not a size"));
    }

    #[test]
    fn params_without_an_untorn_unit_read_as_sectors() {
        let mut json = serde_json::to_value(by_name("hdd-7200").unwrap().params).unwrap();
        json.as_object_mut().unwrap().remove("untorn_bytes");
        let p: DeviceParams = serde_json::from_value(json).unwrap();
        assert_eq!(p.untorn_bytes, 512);
    }
}
