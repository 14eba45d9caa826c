#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/make_random_log.py EVENTS OUT: writes a cudapool.log/1 file of EVENTS random alloc/free
events (seed 1): half allocations, half frees of a random live allocation, sizes uniform over
1 B..1 MiB or 1..64 MiB. A hard case for the pool (many distinct sizes, thousands of live blocks);
used by bench/replay_speed.sh."""
import json
import random
import sys


def main():
    events, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(1)
    with open(out, "w") as f:
        f.write(json.dumps({"schema": "cudapool.log/1", "version": "0.1.0", "conf": "",
                            "devices": [{"id": 0, "total_memory": 80 << 30}]}) + "\n")
        live, next_id = [], 1
        for seq in range(events):
            if live and rng.random() < 0.5:
                ptr, size = live.pop(rng.randrange(len(live)))
                action = "free_requested"
            else:
                size = rng.choice([rng.randint(1, 1 << 20), rng.randint(1 << 20, 64 << 20)])
                ptr, next_id = next_id, next_id + 1
                live.append((ptr, size))
                action = "alloc"
            f.write('{"seq":%d,"t_ns":%d,"tid":1,"dev":0,"action":"%s","ptr":"0x%x","size":%d}\n'
                    % (seq, seq * 1000, action, ptr, size))


if __name__ == "__main__":
    main()
