#!/bin/bash
# print the positions of key instructions of one kernel in a cubin: sassloop.sh CUBIN NAME_FILTER
CU=${CU:-/tmp/cuobj/lib/python3.11/site-packages/nvidia/cu13/bin}
$CU/cuobjdump -sass "$1" | awk -v pat="$2" '/Function : /{f=index($0,pat)>0} f' | grep -E "^\s+/\*[0-9a-f]{4}\*/" | sed -E 's@^\s+/\*([0-9a-f]+)\*/\s+@\1 @; s@\s*/\*.*@@; s@ +;@@' > /tmp/fn.txt
wc -l < /tmp/fn.txt
grep -nE "BAR|LDL|STL|LDG|STS|BRA" /tmp/fn.txt
