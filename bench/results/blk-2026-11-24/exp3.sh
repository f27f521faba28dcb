#!/bin/bash
# perf stat -a (counting) and perf record -a (sampling, period 1) of the block tracepoints over the same
# 2 s, around a 200-fdatasync loop; $1 = spin: a busy loop pinned to CPU 1 (where vda's interrupt lands)
spin=$1; tag=$2; d=/tmp/blk/exp3; mkdir -p $d
[ "$spin" = spin ] && { taskset -c 1 sh -c 'while :; do :; done' & sp=$!; }
sleep 0.2
la=$(cat /proc/loadavg)
perf stat -a -A -x, -e block:block_rq_complete -o $d/$tag.stat -- sleep 2 &
perf record -q -a -e block:block_rq_complete -o $d/$tag.data -- sleep 2 &
sleep 0.5
./loop 200 > $d/$tag.loop
wait %?perf\ stat 2>/dev/null; wait $(jobs -p | grep -v "^${sp:-x}$") 2>/dev/null
[ -n "${sp:-}" ] && kill $sp
sleep 0.1
counted=$(awk -F, '/CPU1/ {print $2}' $d/$tag.stat)
perf script -i $d/$tag.data -F comm,cpu 2>/dev/null | awk '{c=$1; if (c ~ /^swapper/) c="swapper(idle)"; else if (c ~ /^kworker/) c="kworker"; else if (c=="sh") c="spinner"; else if (c!="loop") c="other"; print c, $2}' | sort | uniq -c | tr -s ' ' | tr '\n' ';' > $d/$tag.kept
echo "[$tag $spin] load $la | $(cat $d/$tag.loop) | CPU1 completions counted (perf stat): $counted | sampled (perf record) by interrupted task: $(cat $d/$tag.kept)"
