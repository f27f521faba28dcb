#!/bin/bash
# ftrace instance vs bpftrace vs /sys/block/vda/stat over one window
I=/sys/kernel/tracing/instances/fs2chk2
mkdir -p $I
echo mono > $I/trace_clock
echo 16384 > $I/buffer_size_kb
echo 'dev == 266338304' > $I/events/block/block_rq_complete/filter
echo 1 > $I/events/block/block_rq_complete/enable
echo 0 > $I/tracing_on; echo > $I/trace
mkdir -p /var/tmp/fs2exp
timeout 14 bpftrace -e 'tracepoint:block:block_rq_complete /args->dev == 266338304/ { @n = count(); @c[comm] = count(); }' 2>&1 | grep -v RLIMIT > /tmp/fs2exp2.bpf &
bp=$!
sleep 3
( for i in $(seq 1 300); do dd if=/dev/zero of=/var/tmp/fs2exp/f bs=4k count=1 oflag=dsync conv=notrunc status=none; done ) &
w=$!
echo 1 > $I/tracing_on; a=$(cat /sys/block/vda/stat)
sleep 8
b=$(cat /sys/block/vda/stat); echo 0 > $I/tracing_on
wait $w; wait $bp
grep -c block_rq_complete $I/trace > /tmp/fs2exp2.n
echo "stat delta: writes $(( $(echo $b | cut -d' ' -f5) - $(echo $a | cut -d' ' -f5) )) flushes $(( $(echo $b | cut -d' ' -f15) - $(echo $a | cut -d' ' -f15) )) reads $(( $(echo $b | cut -d' ' -f1) - $(echo $a | cut -d' ' -f1) ))"
echo "ftrace completions: $(cat /tmp/fs2exp2.n)  (W: $(grep block_rq_complete $I/trace | grep -c ' W[A-Z]* \| FWS\| W ') FF: $(grep -c ' FF ' $I/trace))  by pid1 threads: $(grep block_rq_complete $I/trace | grep -cE 'tokio|process_api|spawner|vsock|stop-step|guest-stats')"
cat $I/per_cpu/cpu*/stats | grep -E '^overrun|dropped' | tr '\n' ' '; echo
echo 0 > $I/events/block/block_rq_complete/enable
rmdir $I; rm -rf /var/tmp/fs2exp
grep -E '@n|tokio' /tmp/fs2exp2.bpf
