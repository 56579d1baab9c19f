# stage paths: the live paths not covered above: .ncu-rep import, .nsys-rep export, live roofline, fp16 under nsys
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step ncu_rep ncu --clock-control none -o "$B/rep" --nvtx --nvtx-include "gemmprof smem_caching 1024x1024x1024/" "${GP[@]}" run 3 --size 1024 --launch-once --no-cublas
step profile_rep "${GP[@]}" profile --from "$B/rep.ncu-rep" --save "$B/profile_rep.json"
step profile_cublas "${GP[@]}" profile h3 --cublas --size 4096 --save "$B/profile_h3_4096.json"
step roofline_live "${GP[@]}" roofline 3 10 h3 --size 2048 -o "$B/roofline_live.png"
step nsys_fp16 bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys h2 h3 --size 4096 --save-report $B/fp16; ${GP[*]} compare-nsys $B/fp16.nsys-rep --format json -o $B/nsys_fp16.json"
