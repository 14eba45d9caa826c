// SPDX-License-Identifier: Apache-2.0
// bench/training_log/workload.h: the program whose allocations the generated log records: a
// transformer's training loop as PyTorch runs it with its cache off (every tensor is a cudaMalloc
// and its cudaFree), bf16. The first step makes the weights (kept), cuBLAS's handle and workspaces
// on each thread (kept) and, at its end, Adam's state (kept). Every step: the forward pass on the
// main thread (activations saved for backward, a few temporaries), the backward pass on autograd's
// thread (activation gradients freed as they are used, the saved activations freed layer by layer,
// weight gradients kept), gradient clipping and a foreach Adam step on the main thread (small
// norms, temporaries the size of each weight), then zero_grad frees the gradients. About
// 70 * layers + 36 allocations a step (1996 with the default 28 layers); with vary_shapes each step
// has its own sequence length. Not here: what an allocation does (the Program: process.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/training_log/call_sites.h"
#include "bench/training_log/random.h"

namespace cudapool::bench {

enum class Thread : std::uint8_t { kMain, kAutograd };
// kKept: never freed (weights, optimizer state, cuBLAS's buffers): still allocated at exit.
enum class Lifetime : std::uint8_t { kStep, kKept };

// What the training loop asks of the process it runs in.
class Program {
 public:
  virtual ~Program() = default;
  // A cudaMalloc of bytes (> 0) by thread from site; returns its pointer.
  virtual std::uintptr_t alloc(std::size_t bytes, Site site, Thread thread, Lifetime lifetime) = 0;
  virtual void free(std::uintptr_t ptr, Thread thread) = 0;
  // Time passes without an allocation (the data loader, a synchronization with the GPU).
  virtual void idle(std::uint64_t ns) = 0;
  // cuBLAS makes its stream and queues its first work there (on a thread's first matrix product).
  virtual void library_stream(Thread thread) = 0;
};

struct ModelShape {
  std::size_t layers = 28, hidden = 1024, batch = 8, seq = 512, vocab = 8192;
  // Each step's sequence length is drawn from [seq/2, seq] (multiples of 8), as with inputs of
  // varying length; otherwise every step has seq.
  bool vary_shapes = false;
};

class TrainingLoop {
 public:
  TrainingLoop(const ModelShape& shape, std::uint64_t seed);
  void step(Program& program);
  std::uint64_t steps() const { return steps_; }
  // Allocations of a step after the first (the first adds the kept ones).
  std::uint64_t allocations_per_step() const { return 70 * shape_.layers + 36; }

 private:
  struct Saved;  // one layer's tensors saved for backward
  void first_step_setup(Program& p);
  void forward(Program& p, std::vector<Saved>& saved);
  void backward(Program& p, std::vector<Saved>& saved);
  void optimizer_step(Program& p);
  std::size_t odd_temporary();  // a reduction workspace of an odd size

  ModelShape shape_;
  Random rng_;
  std::uint64_t steps_ = 0;
  std::size_t tokens_ = 0, seq_ = 0;   // this step's
  std::vector<std::size_t> weights_;   // bytes of each weight, in parameter order
  std::vector<std::uintptr_t> grads_;  // this step's gradients (parameter order), until zero_grad
  std::uintptr_t ids_ = 0, labels_ = 0, loss_ = 0, total_weight_ = 0, logits_ = 0, log_probs_ = 0,
                 embedded_ = 0, final_[4] = {};  // final layer norm: input, output, mean, rstd
  bool optimizer_made_ = false, autograd_blas_ = false;
};

}  // namespace cudapool::bench
