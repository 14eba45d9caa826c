#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/verdict_burst.py: the question the report's verdict answers, as a real PyTorch job: a
6-layer transformer serves requests of varying sequence length (64-1024 tokens), then one burst
of long requests (batch 32 of 2048 tokens), then short requests again; at the end
torch.cuda.memory_allocated() is the weights and a little, while what the cache took in the burst
stays held (nvidia-smi's figure). Run it with PyTorch's cache on, or off under the shim
(PYTORCH_NO_CUDA_MEMORY_CACHING=1, LD_PRELOAD=libcudapool.so).

Prints one line, RESULT {json}: steps, nvml_base (device used memory before CUDA started, through
NVML), nvml_peak and nvml_end (sampled every 5 ms by a thread), torch's memory_allocated at the
end and max_memory_allocated / max_memory_reserved (0 and 0 with the cache off). Not here: the
verdict (cudapool report), the runs (bench/verdict_logs.sh)."""
import json
import threading
import time

import pynvml

pynvml.nvmlInit()
HANDLE = pynvml.nvmlDeviceGetHandleByIndex(0)


def used():
    return pynvml.nvmlDeviceGetMemoryInfo(HANDLE).used


BASE = used()
peak = [BASE]
stop = threading.Event()


def sample():
    while not stop.is_set():
        peak[0] = max(peak[0], used())
        time.sleep(0.005)


def serve(model, batch, length, vocab=32000):
    import torch
    x = torch.randint(0, vocab, (batch, length), device="cuda")
    with torch.no_grad():
        y = model(x)
    return float(y[0, 0, 0])


def main():
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    import random

    import torch
    import torch.nn as nn
    random.seed(7)
    torch.manual_seed(7)

    class LM(nn.Module):
        def __init__(self, vocab=32000, d=1024, layers=6):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, 16, 4 * d, batch_first=True)
            self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, x):
            return self.head(self.body(self.emb(x)))

    model = LM().cuda().eval()
    steps = 0
    for _ in range(40):                       # ordinary traffic
        serve(model, random.choice([1, 2, 4, 8]), random.randint(64, 1024))
        steps += 1
    for _ in range(3):                        # the burst
        serve(model, 32, 2048)
        steps += 1
    for _ in range(40):                       # ordinary again
        serve(model, random.choice([1, 2, 4]), random.randint(64, 512))
        steps += 1
    torch.cuda.synchronize()
    time.sleep(0.05)
    stop.set()
    t.join()
    print("RESULT " + json.dumps({
        "steps": steps, "nvml_base": BASE, "nvml_peak": peak[0], "nvml_end": used(),
        "memory_allocated_end": torch.cuda.memory_allocated(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved()}), flush=True)


if __name__ == "__main__":
    main()
