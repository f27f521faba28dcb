#!/usr/bin/env bash
# Overhead of `syncbench trace --pid` (eBPF programs or perf events, nothing stopped) on a write+fdatasync
# loop, against the same loop untraced and under ptrace (`trace -- CMD`). Root needed for the attached modes.
# Usage: bench/trace_attach_overhead.sh [SYNCBENCH_BINARY] [DIR] [ROUNDS] [ITERATIONS] [sync|sfr|other]
# `sync` (default): 8 KiB pwrite + fdatasync per iteration. `sfr`: sync_file_range of a clean range, a
# traced call that does no I/O, so attached - untraced is the tracer's cost per traced call, free of the
# disk's noise. `other`: getppid + pread, calls that are not traced (what tracing costs the rest of a
# traced program).
# Environment: MODES (default "untraced attached ptrace"; `attached` is the default backend (eBPF, perf
# if it cannot load), `attached-bpf` and `attached-perf` the same with `--tracer bpf` / `--tracer perf`;
# each attached mode gets its own per-round ratio to `untraced`. Also `base`: attached with BASE_BIN, an older
# build to compare with, `base2` the same with BASE2_BIN; `perf`: `perf record -p` of the workload's
# calls' syscalls: tracepoints to /dev/null, the kernel's own cost of recording them with a consumer that
# does nothing; `blocks`: `perf record -a` of the block-layer tracepoints syncbench records
# (block_rq_issue, block_rq_complete) to /dev/null, their cost alone; `all`: `trace --all` instead of
# `--pid`, events per CPU instead of per task, stopped by SIGINT after the loop; its count is checked to
# be at least the loop's, as other programs' calls count too; `pertask`: `trace --pid --per-task`, events
# on the loop's task instead of per CPU; `beside`, `beside_pertask`, `beside_untraced`: the cost on a
# program NOT traced: the measured loop runs untraced beside a second, identical loop that `trace --pid`
# (`beside`), `trace --pid --per-task` (`beside_pertask`) or nobody (`beside_untraced`, the baseline)
# traces, `beside_base` the same as `beside` traced by BASE_BIN; the second loop's count is checked),
# TRACE_ARGS (extra flags for the attached modes, e.g. --syncs-only).
# Each round runs the modes back to back, in a rotating order (load drift from other work on the
# machine hits all of them alike), and prints the load average. Per mode: the median and range of the
# wall time per iteration and of the loop's own CPU time per iteration (user + system: includes the
# kernel's cost of recording its traced calls, and is far less inflated than the wall clock when other
# work shares the CPUs); per round, attached/untraced of both. The loop program waits on a FIFO until
# the tracer says it is tracing, so the attached run is traced from its first iteration; the untraced
# run goes through the same handshake. Each attached run's count of the traced call is checked, and that
# no event was lost. Also per mode: the loop's run delay per iteration (time runnable but waiting for a CPU,
# /proc/thread-self/schedstat: where a slower wall clock with the same CPU time goes) and the tracer's own
# CPU time per iteration of the loop (user + system, from /usr/bin/time), and the time the loop was
# blocked (wall - CPU - run delay: waiting for the disk, and for its CPU to leave an idle state).
# SCHED_WAITS=1: each run also records the scheduler's switches and wake-ups (`perf record -a`, which
# costs every mode alike) and charges each of the loop's waits for a CPU to what ran meanwhile
# (bench/sched_waits.py): ns per iteration behind the tracer's own threads, behind everything else.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../target/release/syncbench}"
dir="${2:-.}"
rounds="${3:-9}"
n="${4:-3000}"
workload="${5:-sync}"
read -r -a modes <<<"${MODES:-untraced attached ptrace}"
read -r -a trace_args <<<"${TRACE_ARGS:-}"
case "$workload" in sync) call=fdatasync tps="pwrite64 fdatasync" ;; sfr) call=sync_file_range tps=sync_file_range ;; other) call="" tps="" ;; *) echo "workload: sync, sfr or other" >&2; exit 2 ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
exe="$work/trace_overhead"
gcc -O2 -o "$exe" "$here/trace_overhead.c"

# Of the numbers in a list ("-": not measured in that mode).
median() { tr ' ' '\n' | grep -E '^[0-9]' | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "-")}'; }
range() { tr ' ' '\n' | grep -E '^[0-9]' | sort -g | sed -n '1p;$p' | paste -sd' ' | sed 's/ / – /'; }

check() { # trace.json, mode: every call of the loop seen, and nothing lost
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["trace"]; c={x["call"]: x["count"] for x in t["calls"]}; n=int(sys.argv[2]); assert (not sys.argv[3] or c.get(sys.argv[3])==n or (sys.argv[4]=="all" and c.get(sys.argv[3],0)>=n)) and t["lost_events"]==0, (c, t["lost_events"])' "$1" "$n" "$call" "$2"
}

one() { # mode -> "wall_ns cpu_ns" per iteration
    local mode="$1" fifo="$work/go" out="$work/out" err="$work/err" tracer_bin="$bin"
    rm -f "$fifo" "$out" "$err" "$work/go2" "$work/out2"
    [ "$mode" = base ] && tracer_bin="${BASE_BIN:?BASE_BIN: the syncbench binary to compare with}"
    [ "$mode" = beside_base ] && tracer_bin="${BASE_BIN:?BASE_BIN: the syncbench binary to compare with}"
    [ "$mode" = base2 ] && tracer_bin="${BASE2_BIN:?BASE2_BIN: a second syncbench binary to compare with}"
    local timed=(/usr/bin/time -f "%U %S" -o "$work/time")
    case "$mode" in
    beside*)
        mkfifo "$fifo" "$work/go2"
        sh -c 'read x <"$1"; exec "$2" "$3" "$4" "$5"' _ "$fifo" "$exe" "$workload" "$dir" "$n" >"$out" &
        local pid=$!
        sh -c 'read x <"$1"; exec "$2" "$3" "$4" "$5"' _ "$work/go2" "$exe" "$workload" "$dir" "$n" >"$work/out2" &
        local traced=$! tracer="" per_task=()
        [ "$mode" = beside_pertask ] && per_task=(--per-task)
        if [ "$mode" != beside_untraced ]; then
            "$tracer_bin" trace --pid "$traced" "${per_task[@]}" --json "$work/trace.json" "${trace_args[@]}" 2>"$err" &
            tracer=$!
            until grep -q "syncbench: tracing" "$err" 2>/dev/null; do sleep 0.05; done
        fi
        echo go >"$work/go2" &
        echo go >"$fifo"
        wait "$pid" "$traced"
        if [ -n "$tracer" ]; then
            wait "$tracer"
            check "$work/trace.json" "$mode"
        fi
        ;;
    ptrace)
        "$bin" trace --json "$work/trace.json" "${trace_args[@]}" -- "$exe" "$workload" "$dir" "$n" >"$out" 2>"$err"
        ;;
    *)
        mkfifo "$fifo"
        sh -c 'read x <"$1"; exec "$2" "$3" "$4" "$5"' _ "$fifo" "$exe" "$workload" "$dir" "$n" >"$out" &
        local pid=$! tracer=""
        if [ "$mode" = perf ]; then
            local events=() t
            for t in $tps; do events+=(-e "syscalls:sys_enter_$t" -e "syscalls:sys_exit_$t"); done
            perf record -q -o /dev/null "${events[@]}" -p "$pid" 2>"$err" &
            sleep 1 # perf record says nothing when it is recording
        elif [ "$mode" = blocks ]; then
            perf record -q -a -o /dev/null -e block:block_rq_issue -e block:block_rq_complete 2>"$err" &
            tracer=$!
            sleep 1
        elif [ "$mode" = all ]; then
            "${timed[@]}" "$tracer_bin" trace --all --json "$work/trace.json" "${trace_args[@]}" 2>"$err" &
            tracer=$!
            until grep -q "syncbench: tracing" "$err" 2>/dev/null; do sleep 0.05; done
        elif [ "$mode" != untraced ]; then
            local per_task=()
            [ "$mode" = pertask ] && per_task=(--per-task)
            [ "$mode" = attached-bpf ] && per_task=(--tracer bpf)
            [ "$mode" = attached-perf ] && per_task=(--tracer perf)
            "${timed[@]}" "$tracer_bin" trace --pid "$pid" "${per_task[@]}" --json "$work/trace.json" "${trace_args[@]}" 2>"$err" &
            tracer=$!
            until grep -q "syncbench: tracing" "$err" 2>/dev/null; do sleep 0.05; done
        fi
        local recorder="" tids=""
        if [ -n "${SCHED_WAITS:-}" ]; then
            # The tracer's threads (the child of /usr/bin/time), to tell its share of the loop's waits.
            [ -n "$tracer" ] && tids="$(ls "/proc/$(tr -d " " <"/proc/$tracer/task/$tracer/children")/task" | paste -sd,)"
            perf record -q -a -e sched:sched_switch -e sched:sched_wakeup -o "$work/sched.data" 2>/dev/null &
            recorder=$!
            sleep 0.5 # perf record says nothing when it is recording
        fi
        echo go >"$fifo"
        wait "$pid"
        if [ -n "$recorder" ]; then
            kill -INT "$recorder"
            wait "$recorder" || true
        fi
        if [ "$mode" = blocks ]; then
            kill -INT "$tracer"
            wait "$tracer" || true
        elif [ -n "$tracer" ]; then
            [ "$mode" = all ] && kill -INT "$(tr -d " " <"/proc/$tracer/task/$tracer/children")"
            wait "$tracer" || [ "$mode" = all ]
            check "$work/trace.json" "$mode"
        fi
        ;;
    esac
    local tracer_cpu_ns=- waits="- -"
    # The last line: GNU time writes "Command exited with non-zero status 130" first after a SIGINT.
    [ -s "$work/time" ] && tracer_cpu_ns="$(tail -n 1 "$work/time" | awk -v n="$n" '{printf "%.0f", ($1 + $2) * 1e9 / n}')"
    if [ -s "$work/sched.data" ]; then
        waits="$(perf script -i "$work/sched.data" -F cpu,time,event,trace 2>/dev/null |
            python3 "$here/sched_waits.py" "$pid" "$tids" | awk -v n="$n" '$1 == "none" {print "- -"; next} {printf "%.0f %.0f", $2 / n, ($4 + $6 + $8) / n}')"
    fi
    rm -f "$work/time" "$work/sched.data"
    echo "$(awk '{print $2, $4, $6, $2 - $4 - $6}' "$out") $tracer_cpu_ns $waits"
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), dir $dir, $rounds rounds of $n iterations of $workload, modes ${modes[*]}, trace args: ${trace_args[*]:-none}"
declare -A wall=() cpu=() delay=() blocked=() tcpu=() wtracer=() wother=() ratios=() cpu_ratios=()
m=${#modes[@]}
for r in $(seq "$rounds"); do
    declare -A w=() c=() d=() b=() t=() wt=() wo=()
    line="round $r (load $(cut -d' ' -f1 /proc/loadavg)):"
    for k in $(seq 0 $((m - 1))); do
        mode="${modes[$(((r + k) % m))]}"
        read -r w[$mode] c[$mode] d[$mode] b[$mode] t[$mode] wt[$mode] wo[$mode] <<<"$(one "$mode")"
        blocked[$mode]="${blocked[$mode]:-} ${b[$mode]}"
        wall[$mode]="${wall[$mode]:-} ${w[$mode]}"
        cpu[$mode]="${cpu[$mode]:-} ${c[$mode]}"
        delay[$mode]="${delay[$mode]:-} ${d[$mode]}"
        tcpu[$mode]="${tcpu[$mode]:-} ${t[$mode]}"
        wtracer[$mode]="${wtracer[$mode]:-} ${wt[$mode]}"
        wother[$mode]="${wother[$mode]:-} ${wo[$mode]}"
    done
    for mode in "${modes[@]}"; do
        line="$line $mode ${w[$mode]}/${c[$mode]}/${d[$mode]}/${b[$mode]}/${t[$mode]}"
        [ -n "${SCHED_WAITS:-}" ] && line="$line(waits ${wt[$mode]}+${wo[$mode]})"
    done
    for mode in "${modes[@]}"; do
        case "$mode" in attached*) ;; *) continue ;; esac
        [ -n "${w[untraced]:-}" ] || continue
        ratio="$(awk -v a="${w[$mode]}" -v u="${w[untraced]}" 'BEGIN {printf "%.3f", a / u}')"
        cpu_ratio="$(awk -v a="${c[$mode]}" -v u="${c[untraced]}" 'BEGIN {printf "%.3f", a / u}')"
        ratios[$mode]="${ratios[$mode]:-} $ratio" cpu_ratios[$mode]="${cpu_ratios[$mode]:-} $cpu_ratio"
        line="$line ($mode/untraced: wall $ratio, cpu $cpu_ratio)"
    done
    echo "$line  [wall/cpu/run-delay/blocked/tracer-cpu ns per iteration${SCHED_WAITS:+, (waits behind tracer+others)}]"
    unset w c d b t wt wo
done
for mode in "${modes[@]}"; do
    printf '%-9s wall median %9s range %s   cpu median %8s range %s   run delay median %8s range %s   blocked median %8s range %s   tracer cpu median %s range %s ns/iteration\n' "$mode" \
        "$(echo "${wall[$mode]}" | median)" "$(echo "${wall[$mode]}" | range)" \
        "$(echo "${cpu[$mode]}" | median)" "$(echo "${cpu[$mode]}" | range)" \
        "$(echo "${delay[$mode]}" | median)" "$(echo "${delay[$mode]}" | range)" \
        "$(echo "${blocked[$mode]}" | median)" "$(echo "${blocked[$mode]}" | range)" \
        "$(echo "${tcpu[$mode]}" | median)" "$(echo "${tcpu[$mode]}" | range)"
    if [ -n "${SCHED_WAITS:-}" ]; then
        printf '%-9s waits for a CPU behind the tracer median %s range %s, behind the rest median %s range %s ns/iteration\n' "$mode" \
            "$(echo "${wtracer[$mode]}" | median)" "$(echo "${wtracer[$mode]}" | range)" \
            "$(echo "${wother[$mode]}" | median)" "$(echo "${wother[$mode]}" | range)"
    fi
done
for mode in "${modes[@]}"; do
    [ -n "${ratios[$mode]:-}" ] || continue
    echo "$mode/untraced per round, wall: median $(echo "${ratios[$mode]}" | median), range $(echo "${ratios[$mode]}" | range)"
    echo "$mode/untraced per round, cpu:  median $(echo "${cpu_ratios[$mode]}" | median), range $(echo "${cpu_ratios[$mode]}" | range)"
done
echo "# end $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
