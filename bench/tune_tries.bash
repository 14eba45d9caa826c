# SPDX-License-Identifier: Apache-2.0
# bench/tune_tries.bash: the --try settings that bring a tune run to about 40 settings (sourced by
# bench/tune_speed.sh and bench/tools_speed.sh; not a script of its own). The sweep of a training
# log gives 16-17 settings; these 23 strings bring every run to 40 or more (one may equal a swept
# setting: tune counts it once).
tune_tries=()
for mb in 24 28 36 40 44 48 56 60 96; do tune_tries+=(--try "max_split_size_mb:$mb"); done
for d in 32 64 "[128:2,>:4]" "[32:8,>:2]" "[16:16,>:1]"; do tune_tries+=(--try "roundup_power2_divisions:$d"); done
for r in 40 80 160 320; do tune_tries+=(--try "max_split_size_mb:20,max_non_split_rounding_mb:$r"); done
for mb in 24 48 96; do tune_tries+=(--try "large_segment_size_mb:$mb"); done
for d in 2 16; do tune_tries+=(--try "expandable_segments:True,roundup_power2_divisions:$d"); done
tune_tries+=(--try "expandable_segments:True,large_segment_size_mb:32")
