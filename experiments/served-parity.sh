#!/bin/bash
# Parity: in-process DreamGym against the same run served (dreamgym serve --mode dreamgym) and trained
# through train --env ws://… --set realTasks=server; WebShop, learned model, BC start, dev split.
set -u
export DREAMGYM_DATA=${DREAMGYM_DATA:-../shared/data}
B=${B:-bin/dreamgym}
D=${1:?usage: experiments/served-parity.sh <experiment:webshop --out folder> <out>}
O=${2:?usage: experiments/served-parity.sh <experiment:webshop --out folder> <out>}
mkdir -p $O
for s in 0 1 2; do
  common="--budget 40000 --group 8 --tasks-per-iter 16 --seed $s --set syntheticTasks=seed --set evalSplit=dev"
  bc=$(ls $D/bc-seed$s/checkpoints/iter-*.policy | tail -1)
  if [ ! -f $O/inproc-$s/summary.json ]; then
    rm -rf $O/inproc-$s
    /usr/bin/time -f "%e s wall" node $B train --env webshop --mode dreamgym --experience learned:$D/data-seed$s/model.bin --buffer $D/data-seed$s/seed.db $common --set initPolicy=$bc --eval-every 0 --final-eval-tasks 200 --out $O/inproc-$s > $O/inproc-$s.log 2>&1
  fi
  if [ ! -f $O/client-$s/summary.json ]; then
    rm -rf $O/served-$s $O/client-$s
    port=$((8950 + s))
    node $B serve --env webshop --mode dreamgym --run $O/served-$s --experience learned:$D/data-seed$s/model.bin --buffer $D/data-seed$s/seed.db $common --port $port > $O/served-$s.log 2>&1 &
    spid=$!
    for i in $(seq 1 60); do curl -sf localhost:$port/health > /dev/null && break; sleep 1; done
    /usr/bin/time -f "%e s wall" node $B train --env ws://127.0.0.1:$port --mode real --set realTasks=server --budget 40000 --group 8 --tasks-per-iter 16 --seed $s --set initPolicy=$bc --set grpo.klCoef=0.05 --set grpo.stdFloor=0.1 --eval-every 0 --final-eval-tasks 200 --out $O/client-$s > $O/client-$s.log 2>&1
    kill -TERM $spid; wait $spid
  fi
done
echo done > $O/DONE
