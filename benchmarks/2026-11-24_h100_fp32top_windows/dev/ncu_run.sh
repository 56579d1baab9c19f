#!/bin/bash
# ncu (full set + source page) of chosen launches: bash ncu_run.sh "NAME M N K OFFB REGEX OUT" ...
cd "$(dirname "$0")"; export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/ncu; mkdir -p $R
for spec in "$@"; do
  set -- $spec
  timeout 120 ncu --clock-control none --set full --import-source no -k regex:$6 --launch-skip 1 --launch-count 1 \
    -o $R/$7 -f python3 ncu_target.py build $1 $2 $3 $4 $5 > $R/$7.log 2>&1
  ncu --import $R/$7.ncu-rep --csv --print-units base --page details > $R/$7_details.csv 2>&1
  ncu --import $R/$7.ncu-rep --csv --page source --print-source sass > $R/$7_source.csv 2>&1
  python3 stallmix.py $R/$7_source.csv 2>&1 | head -24
done
rm -f $R/*.ncu-rep; tar -C $OUT -czf $OUT/ncu.tgz ncu; rm -rf $R
