#!/usr/bin/env python3
"""Replay watch logs through watch's detector (measure/watch/detect.rs, re-implemented here from the logged
3-digit values) with the run-queue-wait threshold and the range rule varied: what each part contributed.

  python3 bench/watch_replay.py [--faster-is-change] [--steps SUMMARY] SEEN_LEVEL THRESHOLDS LOG...
    SEEN_LEVEL  0: no range (the detector before it); 3: as shipped (SEEN_LEVEL = CONFIRM)
    THRESHOLDS  comma-separated run-queue wait percentages from which an interval is cpu starved
                (100: effectively off; the shipped threshold is 25)
    LOG         a watch log; A+B: B continued A's state file (a restart), replayed as one
    --faster-is-change  count a confirmed faster shift as a change (the detector before 2026-11-29c);
                without it, as shipped: only slower is a change, faster is re-learned and counted apart
    --before-busy PCT   also count an interval as disturbed when the device was busy with other I/O for PCT%
                or more of the look-back before its window (`before: … busy P% of S`, logs from 2026-11-29c)
    --no-device         ignore the device's own time per commit (`device µs/commit a/b/c`, logs from
                2026-11-29c): a slower commit is then judged on the commit's numbers alone (the detector
                before the device rule)
    --steps SUMMARY     the logs are bench/watch_detect.sh trials (trial-N.log) and SUMMARY its summary.txt:
                per trial, the changes before the step and the interval after it in which the first
                slower change came, counted as the bench counts (the interval in progress at the step is
                not counted)

Intervals disturbed by other I/O or steal stay disturbed; `cpu starved` is re-decided from `cpu wait N%`
(old logs have no wait: nothing is starved). Counts of changes are approximate (the log rounds values).
"""
import math, os, re, sys

T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
MIN_BASELINE, BASELINE_MAX, CONFIRM, RELEARN, MIN_EFFECT, SEEN_MAX = 8, 24, 3, 12, 1.5, 288
UNIT = {'ns': 1e-9, 'µs': 1e-6, 'ms': 1e-3, 's': 1}
BEFORE_BUSY = None
USE_DEVICE = True
CASES = ['fdatasync_8k', 'odsync_8k', 'etcd_wal_2300']
DEVICE_SHARE_MIN, DEVICE_RISE_MIN_MS = 0.5, 0.02


def median(v):
    s = sorted(v); n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def band(values):
    logs = [math.log(v) for v in values]
    c = median(logs)
    spread = 1.4826 * median([abs(l - c) for l in logs])
    n = len(logs)
    half = T95[n - 2] * spread * math.sqrt(1 + 1 / n)
    return math.exp(c - half), math.exp(c), math.exp(c + half)


class Memory:
    def __init__(self, seen_level):
        self.base, self.dev, self.seen, self.level = [], [], {}, seen_level
        self.above_device = 0

    def beyond_seen(self, key, v):
        seen = self.seen.get(key, [])
        if self.level == 0 or len(seen) < self.level:
            return True
        s = sorted(seen)
        return v < s[self.level - 1] or v > s[-self.level]

    def device_carries(self, case, obs):
        """Whether the device's own time per commit rose with the commit's mean time (detect.rs)."""
        now, rate = obs.get((case, 'device')), obs.get((case, 'rate'))
        pairs = [(o[(case, 'device')], o[(case, 'rate')]) for o in self.base if (case, 'device') in o and (case, 'rate') in o]
        if not USE_DEVICE or now is None or rate is None or len(pairs) < MIN_BASELINE or rate <= 0:
            return True
        added_commit = 1e3 / rate - 1e3 / median([p[1] for p in pairs])
        added_device = now - median([p[0] for p in pairs])
        return added_device >= DEVICE_RISE_MIN_MS and added_device >= DEVICE_SHARE_MIN * added_commit

    def deviations(self, obs, above=None):
        d = {}
        if len(self.base) < MIN_BASELINE:
            return d
        for key, v in obs.items():
            if key[1] == 'device':
                continue
            values = [o[key] for o in self.base if key in o]
            if len(values) < MIN_BASELINE:
                continue
            low, mid, high = band(values)
            if v > high and v >= mid * MIN_EFFECT:
                higher = True
            elif v < low and v * MIN_EFFECT <= mid:
                higher = False
            else:
                continue
            if self.beyond_seen(key, v):
                slower = higher == (key[1] == 'p99')
                if slower and not self.device_carries(key[0], obs):
                    if above is not None:
                        above.add(key[0])
                    continue
                d[key] = slower
        return d

    def remember(self, obs):
        for key, v in obs.items():
            if key[1] == 'device':
                continue
            self.seen.setdefault(key, []).append(v)
            del self.seen[key][:-SEEN_MAX]

    def judge(self, obs):
        """The confirmed shifts of this interval: (case, metric) -> True for slower, False for faster."""
        above = set()
        d = self.deviations(obs, above)
        if above and not d:
            self.above_device += 1
            return {}
        changes = {k: x for k, x in d.items() if len(self.dev) + 1 >= CONFIRM
                   and all(self.deviations(p).get(k) == x for p in self.dev[-(CONFIRM - 1):])}
        if not d:
            for p in self.dev:
                self.remember(p)
            self.dev = []
            self.remember(obs)
            self.base = (self.base + [obs])[-BASELINE_MAX:]
        else:
            self.dev = (self.dev + [obs])[-RELEARN:]
            if len(self.dev) >= RELEARN:
                self.base, self.dev = self.dev, []
                for p in self.base:
                    self.remember(p)
        return changes


def intervals(path):
    """(end time, disturbed otherwise, cpu wait %, values) per measured interval of one log."""
    for line in open(path):
        if not line.startswith('20') or 'interval skipped' in line:
            continue
        obs = {}
        for name, num, unit, rate in re.findall(r'(\w+) p99 ([\d.]+) (\S+) (\d+)/s', line):
            obs[(name, 'p99')] = float(num) * UNIT[unit]
            obs[(name, 'rate')] = float(rate)
        device = re.search(r'device µs/commit ([\d/-]+)', line)
        for case, us in zip(CASES, device.group(1).split('/') if device else []):
            if us != '-':
                obs[(case, 'device')] = float(us) / 1e3
        wait = re.search(r'cpu wait (\d+)%', line)
        other = any(c in line for c in ('device I/O not ours', 'CPU steal', 'another syncbench', 'disturbed by other I/O'))
        before = re.search(r'before: [\d.]+ \S+ written, busy (\d+)%', line)
        if BEFORE_BUSY is not None and before and int(before.group(1)) >= BEFORE_BUSY:
            other = True
        yield line[:20], other, int(wait.group(1)) if wait else 0, obs


class Replay:
    """One detector fed interval by interval, with the counts the bench reports."""

    def __init__(self, level, threshold, faster_is_change):
        self.memory, self.threshold, self.faster_is_change = Memory(level), threshold, faster_is_change
        self.n = self.other = self.starved = self.judged = self.changes = self.faster = 0

    def feed(self, other, wait, obs):
        """Judge one interval; True when it reported a change."""
        self.n += 1
        if other:
            self.other += 1
            return False
        if wait >= self.threshold:
            self.starved += 1
            return False
        self.judged += len(self.memory.base) >= MIN_BASELINE
        shifts = self.memory.judge(obs)
        slower = any(shifts.values()) or (self.faster_is_change and bool(shifts))
        self.changes += slower
        self.faster += (not slower) and bool(shifts)
        return slower

    def line(self):
        faster = "" if self.faster_is_change else f", {self.faster} faster (re-learning, not a change)"
        return (f"{self.n} intervals, {self.other} disturbed otherwise, {self.starved} starved, "
                f"{self.memory.above_device} slower above the device, ~{self.judged} judged, "
                f"{self.changes} with a change{faster}")


def steps(summary):
    """trial number -> the step's time, from bench/watch_detect.sh's summary.txt."""
    return {int(m.group(1)): m.group(2) for m in re.finditer(r'trial (\d+): step at (\S+);', open(summary).read())}


def replay_trial(path, step_at, level, threshold, faster_is_change):
    """(changes before the step, the interval after it with the first slower change or None)."""
    replay, before, after = Replay(level, threshold, faster_is_change), 0, []
    for end, other, wait, obs in intervals(path):
        changed = replay.feed(other, wait, obs)
        if end <= step_at:
            before += changed
        else:
            after.append(changed)
    # The first interval that ends after the step was in progress at it: not counted (as the bench).
    first = next((i for i, c in enumerate(after[1:], 1) if c), None)
    return before, first


def main():
    args = sys.argv[1:]
    faster_is_change = '--faster-is-change' in args
    args = [a for a in args if a != '--faster-is-change']
    summary = None
    global BEFORE_BUSY, USE_DEVICE
    if '--no-device' in args:
        USE_DEVICE = False
        args.remove('--no-device')
    if '--before-busy' in args:
        i = args.index('--before-busy')
        BEFORE_BUSY = int(args[i + 1])
        del args[i:i + 2]
    if '--steps' in args:
        i = args.index('--steps')
        summary = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    level = int(args[0])
    for threshold in (int(t) for t in args[1].split(',')):
        for path in args[2:]:
            if summary:
                trial = int(re.search(r'trial-(\d+)\.log', path).group(1))
                if trial not in steps(summary):
                    print(f"{path}: no step recorded (the trial was cut)")
                    continue
                before, first = replay_trial(path, steps(summary)[trial], level, threshold, faster_is_change)
                print(f"{path}: seen level {level}, starved from {threshold}%: {before} changes before the step, "
                      f"first slower change in interval {first or 'never'} after it")
                continue
            replay = Replay(level, threshold, faster_is_change)
            for part in path.split('+'):
                for _, other, wait, obs in intervals(part):
                    replay.feed(other, wait, obs)
            print(f"{path}: seen level {level}, starved from {threshold}%: {replay.line()}")


main()
