#!/usr/bin/env python3
"""Who a task waited behind: from `perf record -a -e sched:sched_switch -e sched:sched_wakeup` (read with
`perf script -F cpu,time,event,trace`), every stretch during which task PID was runnable but not running
(from its wake-up, or its preemption, to its next switch-in) is charged to the task(s) that ran on its
CPU meanwhile. Prints one line: `tracer NS other NS idle NS migrated NS` (totals over the recording, ns;
`none` when the recording holds no switch of PID), where `tracer` is the threads TRACER_TIDS
(comma-separated, may be empty), `idle` the CPU's idle task (the time to leave an idle state),
`migrated` a wait that ended on another CPU. Used by bench/trace_attach_overhead.sh
(SCHED_WAITS=1) to tell the tracer's share of the watched loop's run delay from the other programs'.

Usage: perf script -i FILE -F cpu,time,event,trace | sched_waits.py PID TRACER_TIDS
"""
import re
import sys

pid = sys.argv[1]
tracer = set(t for t in sys.argv[2].split(",") if t)
line_re = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+sched:(sched_switch|sched_wakeup):\s+(.*)")
field_re = re.compile(r"(\w+)=(\S+)")
totals = {"tracer": 0, "other": 0, "idle": 0, "migrated": 0}
waiting = None  # (cpu, since_ns) while PID is runnable and not running
seen = 0  # switches of PID: none means the recording missed it (then `none` is printed, not zeros)


def kind(task):
    if task == "0":
        return "idle"
    return "tracer" if task in tracer else "other"


for line in sys.stdin:
    m = line_re.search(line)
    if not m:
        continue
    cpu, t = int(m.group(1)), round(float(m.group(2)) * 1e9)
    event, rest = m.group(3), m.group(4)
    if event == "sched_wakeup":
        f = dict(field_re.findall(rest))
        if f.get("pid") == pid and waiting is None:
            waiting = (int(f.get("target_cpu", cpu)), t)
        continue
    prev, _, nxt = rest.partition("==>")
    p, n = dict(field_re.findall(prev)), dict(field_re.findall(nxt))
    if waiting is not None:
        wcpu, since = waiting
        if n.get("next_pid") == pid and cpu != wcpu:
            totals["migrated"] += t - since
            waiting = None
        elif cpu == wcpu:
            totals[kind(p.get("prev_pid"))] += t - since
            waiting = None if n.get("next_pid") == pid else (wcpu, t)
    seen += p.get("prev_pid") == pid
    if p.get("prev_pid") == pid and p.get("prev_state", "").startswith("R"):
        waiting = (cpu, t)  # preempted: runnable from now on
print(" ".join(f"{k} {v}" for k, v in totals.items()) if seen else "none")
