# stage report: the results-sharing commands on the ladder just measured (clocks, HTML report, diff with last week's)
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step show "${GP[@]}" show "$B/ladder_$SIZE.json"
step report "${GP[@]}" report "$B/ladder_$SIZE.json" --profile-results benchmarks/2026-11-22_h100_profile/profile_4096.json.gz -o "$B/report_$SIZE.html"
step diff "${GP[@]}" diff benchmarks/2026-11-22_h100_run/ladder_4096.json.gz "$B/ladder_$SIZE.json" --force
