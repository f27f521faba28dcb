#!/bin/bash
tag=$1
I=/sys/kernel/tracing/instances/pdiag
mkdir -p $I
echo mono > $I/trace_clock
echo 65536 > $I/buffer_size_kb
echo 'dev == 266338304' > $I/events/block/block_rq_issue/filter
echo 'dev == 266338304' > $I/events/block/block_rq_complete/filter
echo 1 > $I/events/block/block_rq_issue/enable
echo 1 > $I/events/block/block_rq_complete/enable
echo > $I/trace
echo 1 > $I/tracing_on
rm -f /tmp/diag/$tag.dump
uptime > /tmp/diag/$tag.load
PDIAG_DUMP=/tmp/diag/$tag.dump /work/wt/present/target/debug/syncbench run /var/tmp/pdiag --quick --json /tmp/diag/$tag.json > /tmp/diag/$tag.txt 2>&1
echo 0 > $I/tracing_on
cat $I/trace > /tmp/diag/$tag.ftrace
cat $I/per_cpu/cpu*/stats | grep overrun | tr '\n' ' ' >> /tmp/diag/$tag.load
echo 0 > $I/events/block/block_rq_issue/enable
echo 0 > $I/events/block/block_rq_complete/enable
rmdir $I
python3 /tmp/diag/ratio.py /tmp/diag/$tag.json
