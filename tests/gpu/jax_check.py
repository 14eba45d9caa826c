#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/jax_check.py: JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform (XLA allocates and frees
device memory on demand instead of from its own preallocated arena): jitted computations of
several shapes (a forward pass and its gradient) checked against NumPy in float64-accumulated
references. Exit 0 and a last line `jax_check: ok` when every check passed."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402

os.environ.setdefault("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def main():
    import numpy as np
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_default_matmul_precision", "highest")
    devs = jax.devices()
    print("jax_check: jax %s, devices %s, XLA_PYTHON_CLIENT_ALLOCATOR=%s, shim %s"
          % (jax.__version__, devs, os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR"),
             "loaded" if shim_loaded() else "not-loaded"))
    if not devs or devs[0].platform != "gpu":
        print("jax_check: FAILED (no GPU device)")
        return 1

    @jax.jit
    def forward(x, w1, w2):
        h = jnp.tanh(x @ w1)
        return (h @ w2).sum(axis=1)

    @jax.jit
    def loss_grad(x, w1, w2):
        return jax.grad(lambda w: jnp.mean(forward(x, w, w2) ** 2))(w1)

    def np_forward(x, w1, w2):
        return (np.tanh(x @ w1) @ w2).sum(axis=1)

    rng = np.random.default_rng(0)
    failures = []
    for n, d, h in [(128, 64, 256), (1000, 300, 700), (4096, 512, 1024), (17, 3, 5)]:
        x = rng.standard_normal((n, d)).astype(np.float32)
        w1 = (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32)
        w2 = (rng.standard_normal((h, 8)) / np.sqrt(h)).astype(np.float32)
        got = np.asarray(forward(x, w1, w2))
        want = np_forward(x.astype(np.float64), w1.astype(np.float64), w2.astype(np.float64))
        err = float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))))
        g = np.asarray(loss_grad(x, w1, w2))
        ok = err < 1e-4 and np.all(np.isfinite(g)) and g.shape == w1.shape
        print("jax_check: shape (%d,%d,%d) relative error %.2g, grad %s %s"
              % (n, d, h, err, g.shape, "ok" if ok else "FAILED"))
        if not ok:
            failures.append((n, d, h))
    # Many jitted calls with fresh inputs: buffers are allocated and freed each time.
    twice_sum = jax.jit(lambda a: (a * 2.0).sum())
    acc = 0.0
    for i in range(200):
        x = jnp.full((256, 256), float(i % 7), dtype=jnp.float32)
        acc += float(twice_sum(x))
    want = sum(float(i % 7) * 2.0 * 256 * 256 for i in range(200))
    ok = abs(acc - want) <= 1e-6 * want
    print("jax_check: 200 jitted calls, sum %.1f (want %.1f) %s" % (acc, want, "ok" if ok else "FAILED"))
    if not ok:
        failures.append("loop")
    print("jax_check: %s" % ("ok" if not failures else "FAILED: %s" % failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
