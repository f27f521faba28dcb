//! The device model on a mock clock and an in-memory medium.

use super::*;
use crate::proof::lab::profile::{DeviceParams, Honesty};
use std::cell::RefCell;

/// An in-memory disk.
struct Mem(RefCell<Vec<u8>>);

impl Mem {
    fn new(bytes: usize) -> Mem {
        Mem(RefCell::new(vec![0; bytes]))
    }
    fn sector(&self, n: u64) -> Vec<u8> {
        let s = (n * SECTOR_BYTES) as usize;
        self.0.borrow()[s..s + SECTOR_BYTES as usize].to_vec()
    }
}

impl Medium for Mem {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let o = offset as usize;
        buf.copy_from_slice(&self.0.borrow()[o..o + buf.len()]);
        Ok(())
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        let o = offset as usize;
        self.0.borrow_mut()[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
}

fn params(honesty: Honesty) -> DeviceParams {
    DeviceParams {
        honesty,
        flush_ns: 200_000,
        write_ns: 20_000,
        bandwidth_bytes_per_s: None,
        cache_bytes: 1 << 30,
        destage_after_ns: None,
        destaged_at_cut_percent: 0,
        untorn_bytes: 512,
    }
}

/// A write of `sectors` sectors at sector `at`, every byte `fill`; acknowledged when its time comes.
fn write(dev: &mut DeviceModel, mem: &Mem, now: &mut u64, at: u64, sectors: usize, fill: u8) {
    let data = vec![fill; sectors * SECTOR_BYTES as usize];
    let ticket = dev.submit_write(*now, at * SECTOR_BYTES, &data, mem).unwrap();
    *now = ticket.done_at_ns;
    dev.complete_write(ticket, mem).unwrap();
}

fn flush(dev: &mut DeviceModel, mem: &Mem, now: &mut u64) {
    let ticket = dev.begin_flush(*now);
    *now = ticket.done_at_ns;
    dev.complete_flush(ticket, mem).unwrap();
}

fn is(mem: &Mem, sector: u64, fill: u8) -> bool {
    mem.sector(sector).iter().all(|&b| b == fill)
}

#[test]
fn honest_loses_exactly_the_writes_no_completed_flush_covered() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    for s in 0..10 {
        write(&mut dev, &mem, &mut now, s, 1, 1 + s as u8);
    }
    flush(&mut dev, &mem, &mut now);
    for s in 10..20 {
        write(&mut dev, &mem, &mut now, s, 1, 1 + s as u8);
    }
    // A write overwriting a flushed sector: the flushed version must survive it.
    write(&mut dev, &mem, &mut now, 3, 1, 99);
    let report = dev.cut(7, &mem).unwrap();
    assert!((0..10).all(|s| is(&mem, s, 1 + s as u8)), "flushed writes survive");
    assert!((10..20).all(|s| is(&mem, s, 0)), "unflushed writes are lost");
    assert_eq!((report.lost_writes, report.lost_after_flush, report.lost_acknowledged), (11, 0, 11));
    assert_eq!(report.lost_bytes, 11 * SECTOR_BYTES);
}

#[test]
fn a_flush_covers_only_writes_acknowledged_before_it_began() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 1, 1);
    let ticket = dev.begin_flush(now);
    // A write arriving while the flush runs is not stalled by it and not covered by it.
    let late = dev.submit_write(now + 1, SECTOR_BYTES, &[2; 512], &mem).unwrap();
    assert!(late.done_at_ns < ticket.done_at_ns, "the write does not wait for the flush");
    dev.complete_write(late, &mem).unwrap();
    dev.complete_flush(ticket, &mem).unwrap();
    dev.cut(1, &mem).unwrap();
    assert!(is(&mem, 0, 1) && is(&mem, 1, 0));
}

#[test]
fn ignores_flush_loses_writes_it_said_were_flushed() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::IgnoresFlush), 1);
    let mut now = 0;
    for s in 0..8 {
        write(&mut dev, &mem, &mut now, s, 1, 7);
        let before = now;
        flush(&mut dev, &mem, &mut now);
        assert_eq!(now - before, 200_000, "acknowledged after its fixed cost, no data transferred");
    }
    let report = dev.cut(3, &mem).unwrap();
    assert!((0..8).all(|s| is(&mem, s, 0)));
    assert_eq!((report.lost_writes, report.lost_after_flush), (8, 8));
}

#[test]
fn write_through_loses_nothing_acknowledged() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::WriteThrough), 1);
    let mut now = 0;
    for s in 0..8 {
        write(&mut dev, &mem, &mut now, s * 2, 2, 5);
    }
    // One write still in flight (not acknowledged) when the power goes.
    dev.submit_write(now, 40 * SECTOR_BYTES, &[9; 512], &mem).unwrap();
    let report = dev.cut(11, &mem).unwrap();
    assert!((0..16).all(|s| is(&mem, s, 5)));
    assert_eq!((report.lost_acknowledged, report.lost_writes), (0, 1));
    assert!(is(&mem, 40, 0));
}

#[test]
fn a_cut_tears_one_write_at_a_sector_boundary() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 8, 8, 0xAB);
    let torn = dev.cut(5, &mem).unwrap().torn.expect("one multi-sector write to tear");
    assert_eq!((torn.offset, torn.len_bytes), (8 * SECTOR_BYTES, 8 * SECTOR_BYTES));
    assert!(torn.persisted_bytes > 0 && torn.persisted_bytes < torn.len_bytes);
    assert_eq!(torn.persisted_bytes % SECTOR_BYTES, 0);
    let kept = torn.persisted_bytes / SECTOR_BYTES;
    // Every sector is whole: the first `kept` are new, the rest old.
    assert!((8..8 + kept).all(|s| is(&mem, s, 0xAB)));
    assert!((8 + kept..16).all(|s| is(&mem, s, 0)));
}

#[test]
fn the_same_seed_gives_the_same_cut_and_another_seed_another() {
    let run = |seed: u64| {
        let mem = Mem::new(1 << 20);
        let mut dev = DeviceModel::new(DeviceParams { destaged_at_cut_percent: 50, ..params(Honesty::Honest) }, 9);
        let mut now = 0;
        // Each place is written 4 times: destaging a newer write retires the older ones it covers.
        for s in 0..64 {
            write(&mut dev, &mem, &mut now, (s % 16) * 4, 4, 1 + s as u8);
        }
        let report = dev.cut(seed, &mem).unwrap();
        (report, mem.0.into_inner())
    };
    let (a, disk_a) = run(42);
    let (b, disk_b) = run(42);
    let (c, disk_c) = run(43);
    assert_eq!(a, b);
    assert_eq!(disk_a, disk_b);
    assert!(a.destaged_writes > 0 && a.lost_writes > 0, "{a:?}");
    assert_eq!(a.destaged_writes + a.superseded_writes + a.lost_writes, a.cached_writes, "{a:?}");
    assert!(a != c || disk_a != disk_c);
}

#[test]
fn destaging_in_any_order_keeps_the_newest_version() {
    let mem = Mem::new(1 << 16);
    let p = DeviceParams { destage_after_ns: Some(1), ..params(Honesty::Honest) };
    let mut dev = DeviceModel::new(p, 3);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 4, 1);
    write(&mut dev, &mem, &mut now, 2, 4, 2);
    write(&mut dev, &mem, &mut now, 1, 1, 3);
    dev.tick(now + 10, &mem).unwrap();
    assert_eq!(dev.cached_writes(), 0);
    let expect = [1, 3, 2, 2, 2, 2];
    assert!(expect.iter().enumerate().all(|(s, &f)| is(&mem, s as u64, f)));
}

#[test]
fn reads_see_the_cache_and_partial_sector_writes_merge() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let ticket = dev.submit_write(0, 100, &[7; 10], &mem).unwrap();
    dev.complete_write(ticket, &mem).unwrap();
    let mut buf = vec![0xFF; 1024];
    dev.read(0, &mut buf, &mem).unwrap();
    assert!(buf[..100].iter().all(|&b| b == 0) && buf[100..110].iter().all(|&b| b == 7));
    assert!(buf[110..].iter().all(|&b| b == 0));
    assert!(is(&mem, 0, 0), "nothing durable before a flush");
}

#[test]
fn requests_of_a_generation_that_lost_power_fail() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let w = dev.submit_write(0, 0, &[1; 512], &mem).unwrap();
    let f = dev.begin_flush(0);
    dev.cut(1, &mem).unwrap();
    assert_eq!(dev.complete_write(w, &mem), Err(DeviceLost));
    assert_eq!(dev.complete_flush(f, &mem), Err(DeviceLost));
    assert!(is(&mem, 0, 0));
}

#[test]
fn a_full_cache_destages_in_the_background() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(DeviceParams { cache_bytes: 4 * SECTOR_BYTES, ..params(Honesty::Honest) }, 1);
    let mut now = 0;
    for s in 0..16 {
        write(&mut dev, &mem, &mut now, s, 1, 4);
        dev.tick(now, &mem).unwrap();
    }
    assert_eq!(dev.cached_writes(), 4);
    assert_eq!(dev.stats().counters.background_destages, 12);
}

#[test]
fn an_honest_flush_pays_for_the_dirty_data() {
    let mem = Mem::new(1 << 20);
    let p = DeviceParams { bandwidth_bytes_per_s: Some(512_000_000), ..params(Honesty::Honest) };
    let mut dev = DeviceModel::new(p, 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 1000, 1);
    let ticket = dev.begin_flush(now);
    assert_eq!(ticket.done_at_ns - now, 200_000 + 1_000_000);
}

#[test]
fn stats_record_the_latency_the_device_charged() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 1, 1);
    flush(&mut dev, &mem, &mut now);
    let stats = dev.stats();
    assert_eq!((stats.writes_acknowledged, stats.flushes_completed), (1, 1));
    // One sample each: every percentile is the exact latency charged.
    assert_eq!((stats.write_latency_ns.p50, stats.write_latency_ns.max), (20_000, 20_000), "{stats:?}");
    assert_eq!((stats.flush_latency_ns.p99, stats.flush_latency_ns.mean), (200_000, 200_000.0), "{stats:?}");
    assert_eq!(stats.reply_late_ns.max, 0, "no reply was recorded late");
}

#[test]
fn the_server_s_lateness_is_kept_apart_from_the_charge() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 1, 1);
    dev.record_reply_late(3_000);
    dev.record_reply_late(900_000);
    let stats = dev.stats();
    assert_eq!((stats.reply_late_ns.min, stats.reply_late_ns.max), (3_000, 900_000), "{stats:?}");
    assert_eq!(stats.write_latency_ns.max, 20_000, "the charge stays what the model charged: {stats:?}");
}

#[test]
fn settle_makes_the_whole_cache_durable() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::IgnoresFlush), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 2, 1);
    write(&mut dev, &mem, &mut now, 1, 2, 2);
    dev.settle(&mem).unwrap();
    assert_eq!(dev.cut(1, &mem).unwrap().lost_writes, 0);
    assert!(is(&mem, 0, 1) && is(&mem, 1, 2) && is(&mem, 2, 2));
}

#[test]
fn a_live_change_of_flush_cost_applies_to_flushes_that_begin_after_it() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 1, 1);
    let in_flight = dev.begin_flush(now);
    dev.set_params(DeviceParams { flush_ns: 8_500_000, ..params(Honesty::Honest) });
    assert_eq!(in_flight.done_at_ns - now, 200_000, "a flush in flight keeps the cost it was given");
    now = in_flight.done_at_ns;
    dev.complete_flush(in_flight, &mem).unwrap();
    write(&mut dev, &mem, &mut now, 1, 1, 2);
    let before = now;
    flush(&mut dev, &mem, &mut now);
    assert_eq!(now - before, 8_500_000, "the next flush costs the new value");
    assert_eq!(dev.stats().params.unwrap().flush_ns, 8_500_000, "stats show the values in force");
    dev.set_params(params(Honesty::Honest));
    let before = now;
    flush(&mut dev, &mem, &mut now);
    assert_eq!(now - before, 200_000, "and switching back restores the old cost");
}

#[test]
fn a_live_flip_to_ignoring_flushes_loses_what_later_flushes_promised() {
    let mem = Mem::new(1 << 16);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 1, 1);
    flush(&mut dev, &mem, &mut now);
    dev.set_params(params(Honesty::IgnoresFlush));
    write(&mut dev, &mem, &mut now, 1, 1, 2);
    flush(&mut dev, &mem, &mut now);
    let report = dev.cut(5, &mem).unwrap();
    assert!(is(&mem, 0, 1), "flushed while honest: durable");
    assert!(is(&mem, 1, 0), "flushed after the flip: lost");
    assert_eq!((report.lost_writes, report.lost_after_flush), (1, 1));
}

/// The medium after a mixed workload and a cut with `seed`: every write, flush and cut path at 512 B.
fn mixed_workload_medium(seed: u64) -> (CutReport, Vec<u8>) {
    let mem = Mem::new(1 << 20);
    let p = DeviceParams { destaged_at_cut_percent: 30, ..params(Honesty::Honest) };
    let mut dev = DeviceModel::new(p, 5);
    let mut now = 0;
    for i in 0..200u64 {
        let at = (i * 37) % 1500;
        write(&mut dev, &mem, &mut now, at, 1 + (i % 9) as usize, (i % 251) as u8 + 1);
        if i % 17 == 0 {
            flush(&mut dev, &mem, &mut now);
        }
    }
    let report = dev.cut(seed, &mem).unwrap();
    (report, mem.0.into_inner())
}

#[test]
fn at_512_bytes_a_cut_is_what_it_was_before_the_untorn_option() {
    // FNV-1a of the medium and the torn write after the mixed workload, recorded with the model as it was
    // before `untorn_bytes` existed: the default must not change a single seeded cut.
    let expect = [
        (1u64, 0x787b_9898_b264_6725u64, (546_304u64, 1536u64, 512u64), 10u64, 2u64),
        (99, 0xb946_a193_77ff_4125, (527_360, 1024, 512), 8, 4),
        (12345, 0x7f0d_2c08_83b6_4b25, (489_472, 4608, 4096), 10, 2),
    ];
    for (seed, hash, torn, lost, destaged) in expect {
        let (report, disk) = mixed_workload_medium(seed);
        let t = report.torn.as_ref().map_or((0, 0, 0), |t| (t.offset, t.len_bytes, t.persisted_bytes));
        let got = (crate::core::hash::fnv1a64(&disk), t, report.lost_writes, report.destaged_writes);
        assert_eq!(got, (hash, torn, lost, destaged), "seed {seed}: {report:?}");
    }
}

/// A disk with one `sectors`-long write of 0xAB at sector `at`, cut with `seed` at untorn unit `unit`.
fn cut_one_write(unit: u64, at: u64, sectors: usize, seed: u64) -> (CutReport, Mem) {
    let mem = Mem::new(1 << 20);
    let mut dev = DeviceModel::new(DeviceParams { untorn_bytes: unit, ..params(Honesty::Honest) }, 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, at, sectors, 0xAB);
    let report = dev.cut(seed, &mem).unwrap();
    (report, mem)
}

/// Whether every aligned `unit` of the write (sectors `at..at + sectors`) is all-new or all-old.
fn units_whole(mem: &Mem, unit: u64, at: u64, sectors: u64) -> bool {
    let per_unit = unit / SECTOR_BYTES;
    let mut s = at;
    while s < at + sectors {
        let end = ((s / per_unit + 1) * per_unit).min(at + sectors);
        if !((s..end).all(|x| is(mem, x, 0xAB)) || (s..end).all(|x| is(mem, x, 0))) {
            return false;
        }
        s = end;
    }
    true
}

#[test]
fn a_16_kib_aligned_write_is_never_half_written_under_16_kib() {
    for seed in 0..200 {
        let (report, mem) = cut_one_write(16 << 10, 64, 32, seed);
        assert_eq!(report.torn, None, "seed {seed}: one unit cannot tear");
        assert!(units_whole(&mem, 16 << 10, 64, 32), "seed {seed}");
    }
}

#[test]
fn a_16_kib_aligned_write_tears_at_4_kib_boundaries_under_4_kib() {
    let mut kept = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let (report, mem) = cut_one_write(4 << 10, 64, 32, seed);
        let torn = report.torn.expect("four units: always torn when it is the one write");
        assert_eq!((torn.unit_bytes, torn.units), (4096, 4));
        assert_eq!(torn.persisted_bytes, torn.units_persisted * 4096, "seed {seed}: {torn:?}");
        assert!(units_whole(&mem, 4 << 10, 64, 32), "seed {seed}");
        kept.insert(torn.units_persisted);
    }
    assert_eq!(kept, [1, 2, 3].into(), "every cut point between units occurs");
}

#[test]
fn under_512_bytes_the_same_write_tears_inside_a_4_kib_unit() {
    let torn_inside = (0..200).any(|seed| {
        let (report, mem) = cut_one_write(512, 64, 32, seed);
        report.torn.is_some_and(|t| t.persisted_bytes % 4096 != 0) && !units_whole(&mem, 4 << 10, 64, 32)
    });
    assert!(torn_inside, "sector tearing splits 4 KiB units");
}

#[test]
fn a_write_across_a_16_kib_boundary_tears_only_there() {
    // 16 KiB starting 8 KiB into a unit: two units, the first half and the second half.
    for seed in 0..50 {
        let (report, mem) = cut_one_write(16 << 10, 16, 32, seed);
        let torn = report.torn.expect("two units");
        assert_eq!((torn.units, torn.units_persisted, torn.persisted_bytes), (2, 1, 8192));
        assert!((16..32).all(|s| is(&mem, s, 0xAB)) && (32..48).all(|s| is(&mem, s, 0)));
    }
}

/// A log: appends `from..to` of 8 KiB each from sector 0 (each acknowledged and flushed).
fn append_log(dev: &mut DeviceModel, mem: &Mem, now: &mut u64, from: u64, to: u64) {
    for i in from..to {
        write(dev, mem, now, i * 16, 16, 0x10);
        flush(dev, mem, now);
    }
}

#[test]
fn an_aimed_cut_fires_on_a_data_write_not_on_log_appends() {
    let mem = Mem::new(1 << 22);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    append_log(&mut dev, &mem, &mut now, 0, 2);
    dev.arm_aim(7, AimSpec { min_write_bytes: 8192, within: Vec::new() }, &mem);
    append_log(&mut dev, &mem, &mut now, 2, 5);
    // A log-tail rewrite and a small write elsewhere do not match either.
    write(&mut dev, &mem, &mut now, 4 * 16, 16, 0x11);
    write(&mut dev, &mem, &mut now, 4000, 1, 0x12);
    assert!(dev.take_aimed_cut().is_none(), "nothing matched yet");
    let page = dev.submit_write(now, 6000 * SECTOR_BYTES, &[0xAB; 8192], &mem).unwrap();
    let report = dev.take_aimed_cut().expect("the data write fired it").unwrap();
    let aimed = report.aimed_at.clone().expect("an aimed cut says where");
    assert_eq!(aimed, AimedWrite { offset: 6000 * SECTOR_BYTES, len_bytes: 8192, torn: true });
    let torn = report.torn.clone().expect("the aimed write is the torn one");
    assert_eq!((torn.offset, torn.len_bytes), (6000 * SECTOR_BYTES, 8192));
    assert!(torn.persisted_bytes > 0 && torn.persisted_bytes < 8192);
    assert_eq!(dev.complete_write(page, &mem), Err(DeviceLost), "the write in flight fails with the power");
    assert!((0..5 * 16).all(|s| is(&mem, s, 0x10)), "the flushed log survives");
    assert!(dev.take_aimed_cut().is_none() && dev.disarm_aim().is_none(), "fired once");
}

#[test]
fn an_aimed_cut_at_16_kib_keeps_a_16_kib_page_whole() {
    for seed in 0..50 {
        let mem = Mem::new(1 << 22);
        let mut dev = DeviceModel::new(DeviceParams { untorn_bytes: 16 << 10, ..params(Honesty::Honest) }, 1);
        dev.arm_aim(seed, AimSpec { min_write_bytes: 16 << 10, within: Vec::new() }, &mem);
        dev.submit_write(0, 3200 * SECTOR_BYTES, &[0xAB; 16 << 10], &mem).unwrap();
        let report = dev.take_aimed_cut().expect("fired").unwrap();
        assert_eq!(report.aimed_at.map(|a| a.torn), Some(false));
        assert_eq!(report.torn, None);
        assert!(units_whole(&mem, 16 << 10, 3200, 32), "seed {seed}");
    }
}

#[test]
fn an_aimed_cut_fires_on_a_write_in_the_given_range_or_one_already_cached() {
    let mem = Mem::new(1 << 22);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    let range = 1000 * SECTOR_BYTES..2000 * SECTOR_BYTES;
    dev.arm_aim(3, AimSpec { min_write_bytes: 4096, within: vec![range.clone()] }, &mem);
    write(&mut dev, &mem, &mut now, 5000, 16, 1);
    assert!(dev.take_aimed_cut().is_none(), "outside the range");
    dev.submit_write(now, 1500 * SECTOR_BYTES, &[2; 4096], &mem).unwrap();
    assert_eq!(dev.take_aimed_cut().unwrap().unwrap().aimed_at.unwrap().offset, 1500 * SECTOR_BYTES);

    // Armed while a matching write waits in the cache: it fires at once.
    write(&mut dev, &mem, &mut now, 1200, 8, 3);
    write(&mut dev, &mem, &mut now, 1900, 4, 3);
    dev.arm_aim(4, AimSpec { min_write_bytes: 4096, within: vec![range] }, &mem);
    assert_eq!(dev.take_aimed_cut().unwrap().unwrap().aimed_at.unwrap().offset, 1200 * SECTOR_BYTES);
}

#[test]
fn an_aim_at_several_ranges_fires_in_any_of_them_and_an_empty_range_never() {
    let mem = Mem::new(1 << 22);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    let ranges = vec![100 * SECTOR_BYTES..200 * SECTOR_BYTES, 3000 * SECTOR_BYTES..3100 * SECTOR_BYTES];
    dev.arm_aim(3, AimSpec { min_write_bytes: 4096, within: ranges }, &mem);
    write(&mut dev, &mem, &mut now, 1000, 16, 1);
    assert!(dev.take_aimed_cut().is_none(), "between the ranges");
    dev.submit_write(now, 3050 * SECTOR_BYTES, &[2; 4096], &mem).unwrap();
    assert_eq!(dev.take_aimed_cut().unwrap().unwrap().aimed_at.unwrap().offset, 3050 * SECTOR_BYTES);

    let nowhere = 0..0;
    dev.arm_aim(4, AimSpec { min_write_bytes: 4096, within: vec![nowhere] }, &mem);
    write(&mut dev, &mem, &mut now, 0, 16, 1);
    write(&mut dev, &mem, &mut now, 2000, 16, 1);
    assert!(dev.disarm_aim().is_none(), "0..0 matches no write, not even one at offset 0");
}

#[test]
fn a_disarmed_aim_cuts_nothing() {
    let mem = Mem::new(1 << 22);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    dev.arm_aim(3, AimSpec { min_write_bytes: 1 << 20, within: Vec::new() }, &mem);
    write(&mut dev, &mem, &mut now, 100, 16, 1);
    assert!(dev.disarm_aim().is_none());
    write(&mut dev, &mem, &mut now, 3000, 4096, 1);
    assert_eq!(dev.stats().counters.cuts, 0);
}

#[test]
fn the_queue_depth_during_a_flush_counts_requests_that_overlap_it() {
    let mem = Mem::new(1 << 20);
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let mut now = 0;
    write(&mut dev, &mem, &mut now, 0, 1, 1);
    flush(&mut dev, &mem, &mut now); // alone: 1
    // A write in flight when the flush arrives, three more while it runs: 5 at once.
    let before = dev.submit_write(now, 8 * SECTOR_BYTES, &[2; 512], &mem).unwrap();
    let ticket = dev.begin_flush(now);
    let during: Vec<WriteTicket> =
        (0..3).map(|i| dev.submit_write(now + 1, (16 + i) * SECTOR_BYTES, &[3; 512], &mem).unwrap()).collect();
    for w in std::iter::once(before).chain(during) {
        dev.complete_write(w, &mem).unwrap();
    }
    // A write after the others completed does not raise the flush's peak.
    let late = dev.submit_write(now + 2, 40 * SECTOR_BYTES, &[4; 512], &mem).unwrap();
    dev.complete_write(late, &mem).unwrap();
    dev.complete_flush(ticket, &mem).unwrap();
    let q = dev.stats().queue_depth_during_flush;
    assert_eq!(q, QueueDepth { flushes: 2, p50: 1, p90: 5, max: 5 });
}

#[test]
fn queue_depth_percentiles_come_from_the_per_flush_peaks() {
    assert_eq!(QueueDepth::of(&[]), QueueDepth::default());
    // 10 flushes: 2 alone, 5 with 4 in flight, 3 with 9.
    let mut counts = vec![0; 10];
    (counts[1], counts[4], counts[9]) = (2, 5, 3);
    assert_eq!(QueueDepth::of(&counts), QueueDepth { flushes: 10, p50: 4, p90: 9, max: 9 });
}

/// The in-memory disk, counting the reads and writes the model makes of it.
struct Counting(Mem, std::cell::Cell<(u32, u32)>);

impl Medium for Counting {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.1.set((self.1.get().0 + 1, self.1.get().1));
        self.0.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.1.set((self.1.get().0, self.1.get().1 + 1));
        self.0.write_at(offset, data)
    }
}

#[test]
fn whole_sectors_are_not_read_and_adjacent_sectors_are_destaged_in_one_write() {
    let mem = Counting(Mem::new(1 << 20), std::cell::Cell::new((0, 0)));
    let mut dev = DeviceModel::new(params(Honesty::Honest), 1);
    let a = dev.submit_write(0, 0, &[1; 4 * 512], &mem).unwrap();
    assert_eq!(mem.1.get(), (0, 0), "a write of whole sectors reads nothing");
    let b = dev.submit_write(0, 512 + 100, &[2; 200], &mem).unwrap();
    assert_eq!(mem.1.get(), (0, 0), "a partial sector is read from the cache when it holds it");
    dev.submit_write(0, 8 * 512 + 100, &[3; 200], &mem).unwrap();
    assert_eq!(mem.1.get(), (1, 0), "and from the medium when it does not");
    dev.destage(b.seq, &mem).unwrap();
    assert_eq!(mem.1.get(), (1, 1));
    // Sector 1's older version (a's) went with b's: a is left with sectors 0 and 2..4, two runs.
    dev.destage(a.seq, &mem).unwrap();
    assert_eq!(mem.1.get(), (1, 3));
    let mut expected = vec![1u8; 4 * 512];
    expected[612..812].fill(2);
    assert_eq!(mem.0.0.borrow()[..4 * 512], expected[..]);
}
