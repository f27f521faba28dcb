#!/bin/bash
# usage: run.sh TAG N   : ftrace instance + diag_blk window
set -e
tag=$1 n=$2
I=/sys/kernel/tracing/instances/pdiag
mkdir -p $I
echo mono > $I/trace_clock
echo 32768 > $I/buffer_size_kb
echo 'dev == 266338304' > $I/events/block/block_rq_issue/filter
echo 'dev == 266338304' > $I/events/block/block_rq_complete/filter
echo 1 > $I/events/block/block_rq_issue/enable
echo 1 > $I/events/block/block_rq_complete/enable
echo > $I/trace
echo 1 > $I/tracing_on
/work/wt/present/target/debug/examples/diag_blk /var/tmp/pdiag $n /tmp/diag/$tag.bpf ${3:-1} | tee /tmp/diag/$tag.sum
echo 0 > $I/tracing_on
cat $I/trace > /tmp/diag/$tag.ftrace
cat $I/per_cpu/cpu*/stats | grep overrun | tr '\n' ' ' >> /tmp/diag/$tag.sum
echo 0 > $I/events/block/block_rq_issue/enable
echo 0 > $I/events/block/block_rq_complete/enable
rmdir $I
