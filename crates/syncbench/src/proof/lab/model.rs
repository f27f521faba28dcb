//! The emulated disk's device model: a volatile write cache, its timing, its honesty about flushes, and a
//! seeded power cut. Pure: time is passed in (`now_ns`), the persistent medium is a [`Medium`], so the model
//! runs the same on a mock clock in unit tests and under the FUSE server on the real clock.
//!
//! Data lives in 512-byte sectors. The medium always holds what is durable; every write not yet durable is
//! a *version* of its sectors kept in the cache, newest last. Reads see the newest version over the medium.
//! Destaging a write copies its versions to the medium and drops every older version of those sectors, so
//! destaging in any order leaves the newest destaged data on the medium, as a real cache would.

use super::profile::{DeviceParams, Honesty};
use crate::core::schema::LatencyNs;
use crate::core::stats::Samples;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use syncbench_simfs::SimRng;

/// The unit of the cache, and the smallest unit a power cut tears a write at.
pub use super::profile::SECTOR_BYTES;

/// Where durable data lives (the image file in the lab, a vector in tests).
pub trait Medium {
    /// Fill `buf` from `offset`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
    /// Write `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()>;
}

/// A request that belongs to a device generation that lost power: it fails like a dead disk.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("the emulated disk lost power while this request was in flight")]
pub struct DeviceLost;

/// One write the device has received and not yet made durable.
#[derive(Clone, Debug)]
struct CachedWrite {
    offset: u64,
    len: u64,
    /// Acknowledged to the host (its latency has elapsed).
    acked: bool,
    /// Covered by a flush the device reported complete (only possible without durability: ignores-flush).
    promised: bool,
    /// When the write was acknowledged, for age-based destaging.
    acked_at_ns: u64,
    /// Sectors of this write that still hold a version in the cache.
    live_sectors: u64,
    /// It started at or inside one of the last writes received: an append or a log-tail rewrite.
    streamed: bool,
}

/// A flush in progress: the writes it covers (acknowledged before it began) and when it completes.
#[derive(Clone, Debug)]
pub struct FlushTicket {
    epoch: u64,
    /// Names the flush in the queue-depth accounting.
    id: u64,
    covers: Vec<u64>,
    started_ns: u64,
    /// When the device answers the flush.
    pub done_at_ns: u64,
}

/// A write accepted by the device: its sequence number and when it is acknowledged.
#[derive(Clone, Copy, Debug)]
pub struct WriteTicket {
    epoch: u64,
    seq: u64,
    started_ns: u64,
    /// When the device acknowledges the write.
    pub done_at_ns: u64,
}

/// The device's own counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counters {
    /// Writes received.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Reads received.
    pub reads: u64,
    /// Flushes received.
    pub flushes: u64,
    /// Flushes that completed with nothing to make durable.
    pub empty_flushes: u64,
    /// Writes with Force Unit Access: always 0 through a loop device, which offers no FUA (the block layer
    /// turns FUA into a write and a flush).
    pub fua_writes: u64,
    /// Writes destaged in the background (cache full or old), not by a flush.
    pub background_destages: u64,
    /// Power cuts.
    pub cuts: u64,
    /// Bytes in the volatile cache now.
    pub cached_bytes: u64,
}

/// What one power cut did to the cache.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutReport {
    /// The seed that chose what survived.
    pub seed: u64,
    /// Writes in the cache (received, not durable) when the power went.
    pub cached_writes: u64,
    /// Of those, writes the device had acknowledged.
    pub acknowledged_writes: u64,
    /// Writes destaged just before the cut (survived whole).
    pub destaged_writes: u64,
    /// Writes whose every sector a newer destaged write had overwritten (nothing of them to lose).
    pub superseded_writes: u64,
    /// Writes lost whole or in part.
    pub lost_writes: u64,
    /// Bytes lost.
    pub lost_bytes: u64,
    /// Lost writes a completed flush had covered: the device had said they were durable.
    pub lost_after_flush: u64,
    /// Lost writes the device had acknowledged.
    pub lost_acknowledged: u64,
    /// The write torn at an untorn-unit boundary, if any.
    pub torn: Option<TornWrite>,
    /// The write an aimed cut fired on (absent for a cut at a random moment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aimed_at: Option<AimedWrite>,
    /// The first lost writes (offset, bytes), for showing.
    pub lost_sample: Vec<LostWrite>,
}

/// A write of which only the first untorn units reached the medium.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TornWrite {
    /// Byte offset of the write.
    pub offset: u64,
    /// Its length.
    pub len_bytes: u64,
    /// Bytes that reached the medium (a multiple of 512, less than the length).
    pub persisted_bytes: u64,
    /// The device's untorn unit when it tore (absent in reports from before the option: 512).
    #[serde(default = "sector_bytes")]
    pub unit_bytes: u64,
    /// Aligned units the write touched (at least 2: a write within one unit cannot tear).
    #[serde(default)]
    pub units: u64,
    /// Of those, units that reached the medium whole (the rest kept their old data whole).
    #[serde(default)]
    pub units_persisted: u64,
}

fn sector_bytes() -> u64 {
    SECTOR_BYTES
}

/// What an aimed cut waits for: a write that is not yet durable and not part of a sequential stream, such
/// as a database writing back a data page (as opposed to appending to its log).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AimSpec {
    /// The write must be at least this long (e.g. a database page).
    pub min_write_bytes: u64,
    /// If not empty, the write must overlap one of these byte ranges of the disk (e.g. the table files'
    /// extents); else it must not start at or inside any of the last writes received (appends and log-tail
    /// rewrites).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<std::ops::Range<u64>>,
}

/// The write an aimed cut fired on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AimedWrite {
    /// Byte offset of the write.
    pub offset: u64,
    /// Its length.
    pub len_bytes: u64,
    /// The cut tore it (it spans two or more untorn units); else it was lost or kept whole.
    pub torn: bool,
}

/// How many recent writes define the sequential streams an aimed cut avoids: enough to remember the log
/// and the journal between a few data writes.
const RECENT_WRITES: usize = 64;

/// One lost write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostWrite {
    /// Byte offset.
    pub offset: u64,
    /// Length.
    pub len_bytes: u64,
    /// A completed flush had covered it.
    pub after_flush: bool,
}

/// One cached version of a sector: the sequence number of the write that made it, and the sector's data.
type Version = (u64, Box<[u8]>);

/// How many lost writes a cut report lists.
const LOST_SAMPLE: usize = 16;

/// The device model.
pub struct DeviceModel {
    params: DeviceParams,
    /// Cache versions per sector, oldest first: (write sequence number, data).
    versions: HashMap<u64, Vec<Version>>,
    /// Writes with versions in the cache, by sequence number.
    writes: BTreeMap<u64, CachedWrite>,
    next_seq: u64,
    /// Power generation: requests from an earlier one fail with [`DeviceLost`].
    epoch: u64,
    /// When the media channel is free again (bandwidth) and the next flush may start.
    channel_free_ns: u64,
    flush_free_ns: u64,
    rng: SimRng,
    counters: Counters,
    write_latency: Samples,
    flush_latency: Samples,
    /// How long after its charged time each reply went out (the server's lateness, not the model's).
    reply_late: Samples,
    cut_reports: Vec<CutReport>,
    /// The byte ranges of the last writes received, newest last (for telling appends from other writes).
    recent: std::collections::VecDeque<(u64, u64)>,
    /// A cut waiting for its write (see [`DeviceModel::arm_aim`]).
    aim: Option<ArmedAim>,
    /// Requests (writes and flushes) received and not yet completed.
    in_flight: u64,
    /// Each flush in flight, by id: the most requests in flight at once since it began.
    flush_peaks: HashMap<u64, u64>,
    next_flush_id: u64,
    /// How many flushes saw each peak (index: requests in flight at once, the flush included).
    depth_during_flush: Vec<u64>,
}

/// The most requests in flight the queue-depth histogram tells apart (more count as this many).
const MAX_DEPTH: usize = 1024;

/// How many requests the device had in flight while flushes ran: per flush, the most at once (the flush
/// itself included, so a flush alone is 1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueDepth {
    /// Flushes completed (the samples).
    pub flushes: u64,
    /// The median flush's peak.
    pub p50: u64,
    /// The 90th percentile.
    pub p90: u64,
    /// The highest peak.
    pub max: u64,
}

impl QueueDepth {
    /// From a histogram: `counts[d]` flushes saw at most `d` requests in flight at once.
    fn of(counts: &[u64]) -> QueueDepth {
        let flushes: u64 = counts.iter().sum();
        let rank = |q: f64| {
            let want = ((flushes as f64 * q).ceil() as u64).max(1);
            let mut seen = 0;
            counts.iter().position(|&c| {
                seen += c;
                seen >= want
            })
        };
        let at = |q: f64| rank(q).unwrap_or(0) as u64;
        let max = counts.iter().rposition(|&c| c > 0).unwrap_or(0) as u64;
        QueueDepth { flushes, p50: at(0.5), p90: at(0.9), max }
    }
}

/// An aimed cut, armed: what it waits for, its seed, and once fired, its report.
struct ArmedAim {
    spec: AimSpec,
    seed: u64,
    fired: Option<std::io::Result<CutReport>>,
}

impl DeviceModel {
    /// An empty, powered device; `seed` drives background destaging order.
    pub fn new(params: DeviceParams, seed: u64) -> DeviceModel {
        DeviceModel {
            params,
            versions: HashMap::new(),
            writes: BTreeMap::new(),
            next_seq: 1,
            epoch: 0,
            channel_free_ns: 0,
            flush_free_ns: 0,
            rng: SimRng::new(seed),
            counters: Counters::default(),
            write_latency: Samples::new(),
            flush_latency: Samples::new(),
            reply_late: Samples::new(),
            cut_reports: Vec::new(),
            recent: std::collections::VecDeque::with_capacity(RECENT_WRITES),
            aim: None,
            in_flight: 0,
            flush_peaks: HashMap::new(),
            next_flush_id: 0,
            depth_during_flush: Vec::new(),
        }
    }

    /// The parameters the device runs with.
    pub fn params(&self) -> &DeviceParams {
        &self.params
    }

    /// Change the parameters of a running device (`lab set`): requests that arrive from now on are
    /// charged the new costs and follow the new honesty; requests already in flight keep the completion
    /// time they were given, and the cache keeps what it holds (a flush covers it as before).
    pub fn set_params(&mut self, params: DeviceParams) {
        self.params = params;
    }

    /// The current power generation.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Accept a write: it enters the cache now (reads see it) and is acknowledged at `done_at_ns`.
    pub fn submit_write(
        &mut self,
        now_ns: u64,
        offset: u64,
        data: &[u8],
        medium: &impl Medium,
    ) -> std::io::Result<WriteTicket> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let len = data.len() as u64;
        let first = offset / SECTOR_BYTES;
        let end = (offset + len).div_ceil(SECTOR_BYTES);
        for sector in first..end {
            let block = self.sector_after_write(sector, offset, data, medium)?;
            self.versions.entry(sector).or_default().push((seq, block));
        }
        let streamed = self.note_recent(offset, len);
        let live_sectors = end - first;
        let write = CachedWrite { offset, len, acked: false, promised: false, acked_at_ns: 0, live_sectors, streamed };
        self.writes.insert(seq, write);
        self.counters.writes += 1;
        self.counters.write_bytes += len;
        self.counters.cached_bytes += (end - first) * SECTOR_BYTES;
        let start = now_ns.max(self.channel_free_ns);
        self.channel_free_ns = start + self.params.transfer_ns(len);
        let done_at_ns = self.channel_free_ns + self.params.write_ns;
        let ticket = WriteTicket { epoch: self.epoch, seq, started_ns: now_ns, done_at_ns };
        self.arrived();
        // An armed aimed cut fires as its write arrives: the write is in flight when the power goes.
        if self.aim.as_ref().is_some_and(|aim| aim.fired.is_none() && self.aim_matches(&aim.spec, seq)) {
            self.fire_aim(seq, medium);
        }
        Ok(ticket)
    }

    /// Arm an aimed cut with `seed`: the first write matching `spec` (one already in the cache, else the
    /// next to arrive) cuts the power at once, and is the write the cut tears if it spans two or more
    /// untorn units. Until then the device runs as before; [`DeviceModel::take_aimed_cut`] collects the
    /// cut, [`DeviceModel::disarm_aim`] gives up.
    pub fn arm_aim(&mut self, seed: u64, spec: AimSpec, medium: &impl Medium) {
        let waiting = self.writes.keys().rev().copied().find(|&seq| self.aim_matches(&spec, seq));
        self.aim = Some(ArmedAim { spec, seed, fired: None });
        if let Some(seq) = waiting {
            self.fire_aim(seq, medium);
        }
    }

    /// The aimed cut's report once it fired (the aim is disarmed then); `None` while it waits.
    pub fn take_aimed_cut(&mut self) -> Option<std::io::Result<CutReport>> {
        let fired = self.aim.as_mut()?.fired.take()?;
        self.aim = None;
        Some(fired)
    }

    /// Stop waiting for the aimed write; its cut's report if it fired meanwhile.
    pub fn disarm_aim(&mut self) -> Option<std::io::Result<CutReport>> {
        self.aim.take().and_then(|aim| aim.fired)
    }

    fn aim_matches(&self, spec: &AimSpec, seq: u64) -> bool {
        let Some(w) = self.writes.get(&seq) else { return false };
        let placed = match spec.within.is_empty() {
            false => spec.within.iter().any(|range| w.offset < range.end && w.offset + w.len > range.start),
            true => !w.streamed,
        };
        w.len >= spec.min_write_bytes && placed
    }

    fn fire_aim(&mut self, seq: u64, medium: &impl Medium) {
        let seed = self.aim.as_ref().map_or(0, |aim| aim.seed);
        let report = self.cut_with(seed, Some(seq), medium);
        if let Some(aim) = self.aim.as_mut() {
            aim.fired = Some(report);
        }
    }

    /// A request arrived: one more in flight, and every flush in flight sees it.
    fn arrived(&mut self) {
        self.in_flight += 1;
        for peak in self.flush_peaks.values_mut() {
            *peak = (*peak).max(self.in_flight);
        }
    }

    /// Remember the write's range; whether it starts at or inside one of the last writes (a stream).
    fn note_recent(&mut self, offset: u64, len: u64) -> bool {
        let streamed = self.recent.iter().any(|&(start, end)| (start..=end).contains(&offset));
        if self.recent.len() == RECENT_WRITES {
            self.recent.pop_front();
        }
        self.recent.push_back((offset, offset + len));
        streamed
    }

    /// The write's latency has elapsed: acknowledge it (write-through makes it durable first).
    pub fn complete_write(&mut self, ticket: WriteTicket, medium: &impl Medium) -> Result<(), DeviceLost> {
        if ticket.epoch != self.epoch {
            return Err(DeviceLost);
        }
        self.write_latency.record(ticket.done_at_ns - ticket.started_ns);
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.params.honesty == Honesty::WriteThrough {
            self.destage(ticket.seq, medium).map_err(|_| DeviceLost)?;
        } else if let Some(w) = self.writes.get_mut(&ticket.seq) {
            w.acked = true;
            w.acked_at_ns = ticket.done_at_ns;
        }
        Ok(())
    }

    /// A flush arrives: it covers every write acknowledged so far and completes at `done_at_ns`.
    pub fn begin_flush(&mut self, now_ns: u64) -> FlushTicket {
        self.counters.flushes += 1;
        let covers: Vec<u64> = self.writes.iter().filter(|(_, w)| w.acked).map(|(&seq, _)| seq).collect();
        let done_at_ns = match self.params.honesty {
            // The lie: answered at once, nothing made durable.
            Honesty::IgnoresFlush => now_ns + self.params.flush_ns,
            Honesty::WriteThrough => now_ns.max(self.flush_free_ns) + self.params.flush_ns,
            Honesty::Honest => {
                let dirty: u64 = covers.iter().map(|seq| self.writes[seq].live_sectors * SECTOR_BYTES).sum();
                now_ns.max(self.flush_free_ns) + self.params.flush_ns + self.params.transfer_ns(dirty)
            }
        };
        if self.params.honesty != Honesty::IgnoresFlush {
            self.flush_free_ns = done_at_ns;
        }
        let id = self.next_flush_id;
        self.next_flush_id += 1;
        self.flush_peaks.insert(id, 0);
        self.arrived();
        FlushTicket { epoch: self.epoch, id, covers, started_ns: now_ns, done_at_ns }
    }

    /// The flush's time has come: make what it covers durable (or, ignoring flushes, only promise it).
    pub fn complete_flush(&mut self, ticket: FlushTicket, medium: &impl Medium) -> Result<(), DeviceLost> {
        if ticket.epoch != self.epoch {
            return Err(DeviceLost);
        }
        self.flush_latency.record(ticket.done_at_ns - ticket.started_ns);
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(peak) = self.flush_peaks.remove(&ticket.id) {
            let depth = (peak as usize).min(MAX_DEPTH);
            if self.depth_during_flush.len() <= depth {
                self.depth_during_flush.resize(depth + 1, 0);
            }
            self.depth_during_flush[depth] += 1;
        }
        if ticket.covers.iter().all(|seq| !self.writes.contains_key(seq)) {
            self.counters.empty_flushes += 1;
        }
        for seq in ticket.covers.iter().rev() {
            if self.params.honesty == Honesty::IgnoresFlush {
                if let Some(w) = self.writes.get_mut(seq) {
                    w.promised = true;
                }
            } else {
                self.destage(*seq, medium).map_err(|_| DeviceLost)?;
            }
        }
        Ok(())
    }

    /// Background destaging at `now_ns`: writes acknowledged longer ago than the profile's destage delay, then
    /// random writes while the cache is over capacity — the device's own order, not the host's.
    pub fn tick(&mut self, now_ns: u64, medium: &impl Medium) -> std::io::Result<()> {
        if let Some(after_ns) = self.params.destage_after_ns {
            let old: Vec<u64> = self
                .writes
                .iter()
                .filter(|(_, w)| w.acked && now_ns.saturating_sub(w.acked_at_ns) >= after_ns)
                .map(|(&seq, _)| seq)
                .collect();
            for seq in self.shuffled(old) {
                self.destage(seq, medium)?;
                self.counters.background_destages += 1;
            }
        }
        while self.counters.cached_bytes > self.params.cache_bytes {
            let acked: Vec<u64> = self.writes.iter().filter(|(_, w)| w.acked).map(|(&s, _)| s).collect();
            if acked.is_empty() {
                break;
            }
            let seq = acked[self.rng.below(acked.len() as u64) as usize];
            self.destage(seq, medium)?;
            self.counters.background_destages += 1;
        }
        Ok(())
    }

    /// Read `buf.len()` bytes at `offset`: the newest cached data over the medium.
    pub fn read(&mut self, offset: u64, buf: &mut [u8], medium: &impl Medium) -> std::io::Result<()> {
        self.counters.reads += 1;
        medium.read_at(offset, buf)?;
        let len = buf.len() as u64;
        for sector in offset / SECTOR_BYTES..(offset + len).div_ceil(SECTOR_BYTES) {
            let Some((_, data)) = self.versions.get(&sector).and_then(|v| v.last()) else { continue };
            let start = sector * SECTOR_BYTES;
            let from = offset.max(start);
            let to = (offset + len).min(start + SECTOR_BYTES);
            buf[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&data[(from - start) as usize..(to - start) as usize]);
        }
        Ok(())
    }

    /// Power cut: a seeded random subset of the cache was destaged just before it (each write with the
    /// profile's probability), one more write was being destaged and is torn at an untorn-unit boundary,
    /// and everything else in the cache is gone. Requests of the old generation fail from now on.
    pub fn cut(&mut self, seed: u64, medium: &impl Medium) -> std::io::Result<CutReport> {
        self.cut_with(seed, None, medium)
    }

    /// A cut; `aimed` is the write in flight it was aimed at: torn if it spans two or more untorn units,
    /// else destaged whole or lost like any other.
    fn cut_with(&mut self, seed: u64, aimed: Option<u64>, medium: &impl Medium) -> std::io::Result<CutReport> {
        let mut rng = SimRng::new(seed);
        let mut report = CutReport { seed, cached_writes: self.writes.len() as u64, ..CutReport::default() };
        report.acknowledged_writes = self.writes.values().filter(|w| w.acked).count() as u64;
        let aimed_tearable = aimed.filter(|&seq| self.units_of(seq) >= 2);
        report.aimed_at = aimed.and_then(|seq| self.writes.get(&seq)).map(|w| AimedWrite {
            offset: w.offset,
            len_bytes: w.len,
            torn: aimed_tearable.is_some(),
        });
        let all: Vec<u64> = self.writes.keys().copied().filter(|&seq| Some(seq) != aimed_tearable).collect();
        let mut remaining = Vec::new();
        for seq in all {
            if rng.chance(self.params.destaged_at_cut_percent, 100) {
                self.destage(seq, medium)?;
                report.destaged_writes += 1;
            } else {
                remaining.push(seq);
            }
        }
        // Destaging a newer write retires the older writes it fully overwrote: they are not lost.
        let before = remaining.len();
        remaining.retain(|seq| self.writes.contains_key(seq));
        report.superseded_writes = (before - remaining.len()) as u64;
        let torn = aimed_tearable.or_else(|| {
            let tearable: Vec<u64> = remaining.iter().copied().filter(|&s| self.units_of(s) >= 2).collect();
            (!tearable.is_empty()).then(|| tearable[rng.below(tearable.len() as u64) as usize])
        });
        if let Some(seq) = torn {
            report.torn = Some(self.tear(seq, &mut rng, medium)?);
        }
        // The aimed write was in flight, newest of all: no destaged write superseded it.
        remaining.extend(aimed_tearable);
        self.count_lost(&remaining, &mut report);
        self.power_off(&report);
        Ok(report)
    }

    /// What the cut lost: `remaining`, the writes neither destaged nor superseded.
    fn count_lost(&self, remaining: &[u64], report: &mut CutReport) {
        for seq in remaining {
            let w = &self.writes[seq];
            report.lost_writes += 1;
            report.lost_bytes += w.len;
            report.lost_after_flush += u64::from(w.promised);
            report.lost_acknowledged += u64::from(w.acked);
            if report.lost_sample.len() < LOST_SAMPLE {
                report.lost_sample.push(LostWrite { offset: w.offset, len_bytes: w.len, after_flush: w.promised });
            }
        }
    }

    /// The cache is gone and a new power generation begins.
    fn power_off(&mut self, report: &CutReport) {
        self.versions.clear();
        self.writes.clear();
        self.recent.clear();
        self.in_flight = 0;
        self.flush_peaks.clear();
        self.counters.cached_bytes = 0;
        self.counters.cuts += 1;
        self.epoch += 1;
        self.channel_free_ns = 0;
        self.flush_free_ns = 0;
        self.cut_reports.push(report.clone());
    }

    /// Make everything in the cache durable at once (the lab starts from a settled disk: mkfs's writes are
    /// not part of any experiment).
    pub fn settle(&mut self, medium: &impl Medium) -> std::io::Result<()> {
        let all: Vec<u64> = self.writes.keys().copied().collect();
        for seq in all.into_iter().rev() {
            self.destage(seq, medium)?;
        }
        Ok(())
    }

    /// A reply went out `late_ns` after the time the model charged for its request: kept apart from the
    /// charge, so what the server adds to a profile's latency can be seen.
    pub fn record_reply_late(&mut self, late_ns: u64) {
        self.reply_late.record(late_ns);
    }

    /// Counters, with the latency histograms and every cut's report.
    pub fn stats(&self) -> Stats {
        Stats {
            counters: self.counters.clone(),
            writes_acknowledged: self.write_latency.count(),
            write_latency_ns: self.write_latency.latency(),
            flushes_completed: self.flush_latency.count(),
            flush_latency_ns: self.flush_latency.latency(),
            reply_late_ns: self.reply_late.latency(),
            queue_depth_during_flush: QueueDepth::of(&self.depth_during_flush),
            cuts: self.cut_reports.clone(),
            params: Some(self.params.clone()),
        }
    }

    /// Writes received and not yet durable, by sequence number (for tests and stats).
    pub fn cached_writes(&self) -> usize {
        self.writes.len()
    }

    /// Sectors that still hold a version of `seq`, ascending.
    fn live_sectors_of(&self, seq: u64) -> Vec<u64> {
        let Some(w) = self.writes.get(&seq) else { return Vec::new() };
        (w.offset / SECTOR_BYTES..(w.offset + w.len).div_ceil(SECTOR_BYTES))
            .filter(|s| self.versions.get(s).is_some_and(|v| v.iter().any(|(q, _)| *q == seq)))
            .collect()
    }

    /// How many aligned untorn units `seq`'s live sectors touch (it can tear only if two or more).
    fn units_of(&self, seq: u64) -> u64 {
        if self.params.untorn_bytes <= SECTOR_BYTES {
            return self.writes.get(&seq).map_or(0, |w| w.live_sectors);
        }
        let mut units: Vec<u64> =
            self.live_sectors_of(seq).iter().map(|s| s * SECTOR_BYTES / self.params.untorn_bytes).collect();
        units.dedup();
        units.len() as u64
    }

    /// Persist `seq`'s cached versions in its first untorn units (at least one unit, not all): each unit
    /// of the write reaches the medium whole or not at all.
    fn tear(&mut self, seq: u64, rng: &mut SimRng, medium: &impl Medium) -> std::io::Result<TornWrite> {
        let w = self.writes[&seq].clone();
        let unit_bytes = self.params.untorn_bytes.max(SECTOR_BYTES);
        let unit_of = |sector: u64| sector * SECTOR_BYTES / unit_bytes;
        let sectors = self.live_sectors_of(seq);
        let mut units: Vec<u64> = sectors.iter().map(|&s| unit_of(s)).collect();
        units.dedup();
        let keep_units = 1 + rng.below(units.len() as u64 - 1) as usize;
        let last_kept = units[keep_units - 1];
        let kept: Vec<u64> = sectors.iter().copied().take_while(|&s| unit_of(s) <= last_kept).collect();
        for &sector in &kept {
            let data = &self.versions[&sector].iter().find(|(q, _)| *q == seq).expect("filtered above").1;
            medium.write_at(sector * SECTOR_BYTES, data)?;
        }
        Ok(TornWrite {
            offset: w.offset,
            len_bytes: w.len,
            persisted_bytes: kept.len() as u64 * SECTOR_BYTES,
            unit_bytes,
            units: units.len() as u64,
            units_persisted: keep_units as u64,
        })
    }

    /// Sector `sector` as a write of `data` at `offset` leaves it. Only a sector the write covers in part
    /// needs its current contents: reading the others would cost a read of the image per sector.
    fn sector_after_write(
        &self,
        sector: u64,
        offset: u64,
        data: &[u8],
        medium: &impl Medium,
    ) -> std::io::Result<Box<[u8]>> {
        let start = sector * SECTOR_BYTES;
        let from = offset.max(start);
        let to = (offset + data.len() as u64).min(start + SECTOR_BYTES);
        let new_bytes = &data[(from - offset) as usize..(to - offset) as usize];
        if to - from == SECTOR_BYTES {
            return Ok(new_bytes.into());
        }
        let mut block = self.view_sector(sector, medium)?;
        block[(from - start) as usize..(to - start) as usize].copy_from_slice(new_bytes);
        Ok(block.into_boxed_slice())
    }

    /// Write `seq`'s cached versions to the medium, one write per run of adjacent sectors (the same bytes
    /// to the same places as one write per sector, at a fraction of the image writes); the sectors written.
    fn write_versions(
        &self,
        seq: u64,
        sectors: std::ops::Range<u64>,
        medium: &impl Medium,
    ) -> std::io::Result<Vec<u64>> {
        let mut written = Vec::new();
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0;
        for sector in sectors {
            let version = self.versions.get(&sector).and_then(|list| list.iter().find(|(q, _)| *q == seq));
            let Some((_, data)) = version else { continue };
            if !run.is_empty() && run_start + run.len() as u64 / SECTOR_BYTES != sector {
                medium.write_at(run_start * SECTOR_BYTES, &run)?;
                run.clear();
            }
            if run.is_empty() {
                run_start = sector;
            }
            run.extend_from_slice(data);
            written.push(sector);
        }
        if !run.is_empty() {
            medium.write_at(run_start * SECTOR_BYTES, &run)?;
        }
        Ok(written)
    }

    /// Copy `seq`'s versions to the medium and drop every version of those sectors up to it.
    fn destage(&mut self, seq: u64, medium: &impl Medium) -> std::io::Result<()> {
        let Some(w) = self.writes.get(&seq) else { return Ok(()) };
        let range = w.offset / SECTOR_BYTES..(w.offset + w.len).div_ceil(SECTOR_BYTES);
        for sector in self.write_versions(seq, range, medium)? {
            let Some(list) = self.versions.get_mut(&sector) else { continue };
            let Some(pos) = list.iter().position(|(q, _)| *q == seq) else { continue };
            let dropped: Vec<u64> = list.drain(..=pos).map(|(q, _)| q).collect();
            if list.is_empty() {
                self.versions.remove(&sector);
            }
            for q in dropped {
                self.counters.cached_bytes -= SECTOR_BYTES;
                let gone = self.writes.get_mut(&q).map(|w| {
                    w.live_sectors -= 1;
                    w.live_sectors == 0
                });
                if gone == Some(true) {
                    self.writes.remove(&q);
                }
            }
        }
        Ok(())
    }

    /// The current contents of one sector: its newest cached version, else the medium.
    fn view_sector(&self, sector: u64, medium: &impl Medium) -> std::io::Result<Vec<u8>> {
        if let Some((_, data)) = self.versions.get(&sector).and_then(|v| v.last()) {
            return Ok(data.to_vec());
        }
        let mut block = vec![0u8; SECTOR_BYTES as usize];
        medium.read_at(sector * SECTOR_BYTES, &mut block)?;
        Ok(block)
    }

    fn shuffled(&mut self, mut items: Vec<u64>) -> Vec<u64> {
        for i in (1..items.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
        items
    }
}

/// Counters and latency summaries, as `lab stats` shows them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stats {
    /// The device's counters.
    pub counters: Counters,
    /// Writes acknowledged (the samples of the write latency).
    pub writes_acknowledged: u64,
    /// Write latency the device charged (syncbench's one latency summary, see [`Samples`]).
    pub write_latency_ns: LatencyNs,
    /// Flushes completed (the samples of the flush latency).
    pub flushes_completed: u64,
    /// Flush latency the device charged.
    pub flush_latency_ns: LatencyNs,
    /// How long after the charged time replies went out (absent from servers before it: all zero).
    #[serde(default)]
    pub reply_late_ns: LatencyNs,
    /// Requests in flight at once while flushes ran (absent from servers before it: all zero).
    #[serde(default)]
    pub queue_depth_during_flush: QueueDepth,
    /// One report per power cut.
    pub cuts: Vec<CutReport>,
    /// The parameters in force now (changed live by `lab set`; absent from servers before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<DeviceParams>,
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
