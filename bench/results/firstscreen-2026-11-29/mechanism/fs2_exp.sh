#!/bin/bash
# ftrace instance + bpftrace (perf-attached) on the same tracepoints, same window
I=/sys/kernel/tracing/instances/fs2chk
mkdir -p $I
echo 16384 > $I/buffer_size_kb
echo 1 > $I/events/sched/sched_switch/enable
echo 1 > $I/events/block/block_rq_complete/enable
echo 1 > $I/tracing_on
mkdir -p /var/tmp/fs2exp
( for i in $(seq 1 400); do dd if=/dev/zero of=/var/tmp/fs2exp/f bs=4k count=1 oflag=dsync conv=notrunc status=none; done ) &
w=$!
timeout 12 bpftrace -e 'tracepoint:sched:sched_switch { @sw[args->prev_comm]=count(); } tracepoint:block:block_rq_complete { @rq[comm]=count(); } interval:s:10 { exit(); }' 2>&1 | grep -v RLIMIT > /tmp/fs2exp.bpf
echo 0 > $I/tracing_on
wait $w
cat $I/trace > /tmp/fs2exp.ftrace
cat $I/per_cpu/cpu*/stats | grep overrun
echo 0 > $I/events/sched/sched_switch/enable
echo 0 > $I/events/block/block_rq_complete/enable
rmdir $I
rm -rf /var/tmp/fs2exp
echo "bpftrace sched_switch prev tokio/pid1:"; grep -E 'tokio|process_api|spawner|vsock|stop-step|guest-stats' /tmp/fs2exp.bpf
echo "ftrace sched_switch prev tokio/pid1:"; grep -o 'prev_comm=[^ ]*' /tmp/fs2exp.ftrace | sort | uniq -c | grep -E 'tokio|process_api|spawner|vsock|stop-step|guest-stats'
echo "ftrace block_rq_complete by current:"; grep block_rq_complete /tmp/fs2exp.ftrace | awk '{print $1}' | sed 's/-[0-9]*$//' | sort | uniq -c | sort -rn | head -8
echo "bpftrace rq by comm:"; grep '@rq' /tmp/fs2exp.bpf | sort -t: -k2 -n | tail -8
echo "totals: ftrace rq $(grep -c block_rq_complete /tmp/fs2exp.ftrace) bpftrace rq $(grep '@rq' /tmp/fs2exp.bpf | awk -F': ' '{s+=$2} END{print s}')"
