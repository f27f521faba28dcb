#!/usr/bin/env python3
"""Replay watch logs through watch's detector (measure/watch/detect.rs, re-implemented here from the logged
3-digit values) with the run-queue-wait threshold and the range rule varied: what each part contributed.

  python3 bench/watch_replay.py SEEN_LEVEL THRESHOLDS LOG...
    SEEN_LEVEL  0: no range (the detector before it); 3: as shipped (SEEN_LEVEL = CONFIRM)
    THRESHOLDS  comma-separated run-queue wait percentages from which an interval is cpu starved
                (100: effectively off; the shipped threshold is 25)

Intervals disturbed by other I/O or steal stay disturbed; `cpu starved` is re-decided from `cpu wait N%`
(old logs have no wait: nothing is starved). Counts of changes are approximate (the log rounds values).
"""
import math, re, sys

T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
MIN_BASELINE, BASELINE_MAX, CONFIRM, RELEARN, MIN_EFFECT, SEEN_MAX = 8, 24, 3, 12, 1.5, 288
UNIT = {'ns': 1e-9, 'µs': 1e-6, 'ms': 1e-3, 's': 1}


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

    def beyond_seen(self, key, v):
        seen = self.seen.get(key, [])
        if self.level == 0 or len(seen) < self.level:
            return True
        s = sorted(seen)
        return v < s[self.level - 1] or v > s[-self.level]

    def deviations(self, obs):
        d = {}
        if len(self.base) < MIN_BASELINE:
            return d
        for key, v in obs.items():
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
                d[key] = higher == (key[1] == 'p99')
        return d

    def remember(self, obs):
        for key, v in obs.items():
            self.seen.setdefault(key, []).append(v)
            del self.seen[key][:-SEEN_MAX]

    def judge(self, obs):
        d = self.deviations(obs)
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
    for line in open(path):
        if not line.startswith('20') or 'interval skipped' in line:
            continue
        obs = {}
        for name, num, unit, rate in re.findall(r'(\w+) p99 ([\d.]+) (\S+) (\d+)/s', line):
            obs[(name, 'p99')] = float(num) * UNIT[unit]
            obs[(name, 'rate')] = float(rate)
        wait = re.search(r'cpu wait (\d+)%', line)
        other = any(c in line for c in ('device I/O not ours', 'CPU steal', 'another syncbench', 'disturbed by other I/O'))
        yield other, int(wait.group(1)) if wait else 0, obs


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    level = int(sys.argv[1])
    for threshold in (int(t) for t in sys.argv[2].split(',')):
        for path in sys.argv[3:]:
            memory, n, other_n, starved, judged, changes = Memory(level), 0, 0, 0, 0, 0
            for other, wait, obs in intervals(path):
                n += 1
                if other:
                    other_n += 1
                elif wait >= threshold:
                    starved += 1
                else:
                    judged += len(memory.base) >= MIN_BASELINE
                    changes += bool(memory.judge(obs))
            print(f"{path}: seen level {level}, starved from {threshold}%: {n} intervals, {other_n} disturbed "
                  f"otherwise, {starved} starved, ~{judged} judged, {changes} with a change")


main()
