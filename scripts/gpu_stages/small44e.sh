# stage small44e: the GPU tests of h8's clusters (2 x 2 new) and of the same bits launch after launch (h8's split, h13's clusters of 2 and 4)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
step small44e_pytest python3 -m pytest -q -p no:cacheprovider -x tests/test_hopper_split_k.py \
  tests/test_hopper_cluster_split_k.py -k "same_bits or in_clusters or repeats_its_bits"
