#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""examples/make_training_log.py: writes examples/logs/training-loop.jsonl, the allocation log that
`scripts/cudapool demo` replays. It is synthetic (made here, not recorded by the shim): the
allocation pattern of a small transformer-like training loop, 40 steps, with the batch growing every
10 steps, in the cudapool.log/1 format (docs/log-format.md). Deterministic: same output every run.
"""
import json
import os
import random

MiB = 1 << 20


def main():
    rng = random.Random(2026)
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs", "training-loop.jsonl")
    lines = []
    header = {
        "schema": "cudapool.log/1", "version": "0.1.0", "pid": 4242, "host": "synthetic",
        "executable": "examples/make_training_log.py", "argv": [], "conf": "",
        "devices": [{"id": 0, "name": "synthetic 80 GiB device", "total_memory": 80 << 30}],
    }
    lines.append(json.dumps(header, separators=(",", ":")))
    state = {"seq": 0, "t": 0, "next_ptr": 0x7f0000000000}

    def event(action, ptr, size):
        state["seq"] += 1
        state["t"] += rng.randint(800, 4000)
        lines.append('{"seq":%d,"t_ns":%d,"tid":1,"dev":0,"action":"%s","ptr":"0x%x","size":%d}'
                     % (state["seq"], state["t"], action, ptr, size))

    def alloc(size):
        ptr = state["next_ptr"]
        state["next_ptr"] += 4096
        event("alloc", ptr, size)
        return (ptr, size)

    def free(t):
        event("free_requested", t[0], t[1])

    layers, hidden = 24, 2048
    params = [alloc(hidden * hidden * 4) for _ in range(layers)]  # fp32 weights, 16 MiB each
    params += [alloc(hidden * 4) for _ in range(layers)]  # biases
    opt_state = [alloc(p[1]) for p in params] + [alloc(p[1]) for p in params]  # Adam moments
    for step in range(40):
        batch = 8 + 2 * (step // 10)  # grows: 8, 10, 12, 14
        tokens = batch * 512
        inputs = alloc(tokens * 8)
        acts = []
        for _ in range(layers):  # forward: keep activations, drop temporaries
            tmp = alloc(tokens * hidden * 2)
            acts.append(alloc(tokens * hidden * 2))
            acts.append(alloc(tokens * 4 * rng.randint(1, 3)))
            free(tmp)
        loss = alloc(4)
        grads = []
        for i in reversed(range(layers)):  # backward: grads appear, activations go
            g = alloc(hidden * hidden * 4)
            gb = alloc(hidden * 4)
            tmp = alloc(tokens * hidden * 2)
            free(tmp)
            free(acts.pop())
            free(acts.pop())
            grads += [g, gb]
        for g in grads:  # optimizer step
            t = alloc(g[1])
            free(t)
            free(g)
        free(loss)
        free(inputs)
    for t in params + opt_state:
        free(t)
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s: %d lines" % (out_path, len(lines)))


if __name__ == "__main__":
    main()
