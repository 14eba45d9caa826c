// SPDX-License-Identifier: Apache-2.0
// bench/training_log/workload.cpp: see workload.h. Each pass's comment says which allocations it
// makes; the counts add up to allocations_per_step() (18 L + 12 forward, 28 L + 12 backward,
// 24 L + 12 for clipping and Adam, with P = 12 L + 4 weights).
#include "bench/training_log/workload.h"

#include <algorithm>

namespace cudapool::bench {

namespace {

constexpr std::size_t kElement = 2;  // bf16
constexpr std::size_t kMiB = std::size_t{1} << 20;
// A layer's 12 weights, in parameter order (the constructor gives their sizes).
enum Weight {
  kLn1W,
  kLn1B,
  kQkvW,
  kQkvB,
  kProjW,
  kProjB,
  kLn2W,
  kLn2B,
  kFc1W,
  kFc1B,
  kFc2W,
  kFc2B
};
constexpr std::size_t kLayerWeights = 12;

std::size_t heads_of(std::size_t hidden) {
  return std::max<std::size_t>(1, hidden / 64);
}

// A pass's calls on its thread: A allocates one of the step's tensors, F frees one.
struct On {
  Program& p;
  Thread t;
  std::uintptr_t A(std::size_t bytes, Site site) const {
    return p.alloc(bytes, site, t, Lifetime::kStep);
  }
  void F(std::uintptr_t ptr) const { p.free(ptr, t); }
  // One of the tensors never freed.
  void keep(std::size_t bytes, Site site) const { p.alloc(bytes, site, t, Lifetime::kKept); }
  // A thread's first matrix product: its cuBLAS handle and two workspaces (kept).
  void cublas_buffers() const {
    keep(1024, Site::kCublasHandle);
    keep(32 * kMiB, Site::kCublasWorkspace);
    keep(32 * kMiB, Site::kCublasWorkspace);
  }
};

}  // namespace

struct TrainingLoop::Saved {
  std::uintptr_t x, ln1_out, mean1, rstd1, qkv, rng, attn, lse, mask1, x1, ln2_out, mean2, rstd2, h,
      g, mask2;
};

TrainingLoop::TrainingLoop(const ModelShape& shape, std::uint64_t seed)
    : shape_(shape), rng_(seed) {
  const std::size_t d = shape.hidden, e = kElement;
  weights_.push_back(shape.vocab * d * e);  // token embedding, tied with the output projection
  weights_.push_back(shape.seq * d * e);    // position embedding
  for (std::size_t l = 0; l < shape.layers; ++l) {
    for (std::size_t w : {d, d, 3 * d * d, 3 * d, d * d, d, d, d, 4 * d * d, 4 * d, 4 * d * d, d})
      weights_.push_back(w * e);
  }
  weights_.push_back(d * e);  // final layer norm
  weights_.push_back(d * e);
}

std::size_t TrainingLoop::odd_temporary() {
  return 6144 + 28 * rng_.between(0, 255);
}

void TrainingLoop::step(Program& p) {
  seq_ = shape_.vary_shapes ? 8 * rng_.between(std::max<std::size_t>(1, shape_.seq / 16),
                                               std::max<std::size_t>(1, shape_.seq / 8))
                            : shape_.seq;
  tokens_ = shape_.batch * seq_;
  if (steps_ == 0) first_step_setup(p);
  std::vector<Saved> saved(shape_.layers);
  forward(p, saved);
  backward(p, saved);
  optimizer_step(p);
  ++steps_;
}

// model.to("cuda"): every weight, kept.
void TrainingLoop::first_step_setup(Program& p) {
  for (std::size_t bytes : weights_) p.alloc(bytes, Site::kWeight, Thread::kMain, Lifetime::kKept);
}

// Main thread: the batch's ids and labels (2), the embedding and the position sum (2), 18 a layer,
// the final layer norm (3), the logits (1), the loss in fp32 (2) and its two scalars (2).
void TrainingLoop::forward(Program& p, std::vector<Saved>& saved) {
  const On on{p, Thread::kMain};
  const std::size_t n = tokens_, d = shape_.hidden, e = kElement, heads = heads_of(d);
  ids_ = on.A(n * 8, Site::kInputCopy);
  labels_ = on.A(n * 8, Site::kInputCopy);
  const std::uintptr_t tokens = on.A(n * d * e, Site::kEmbedding);
  embedded_ = on.A(n * d * e, Site::kResidualAdd);
  on.F(tokens);
  std::uintptr_t x = embedded_;
  for (std::size_t l = 0; l < shape_.layers; ++l) {
    Saved& s = saved[l];
    s.x = x;
    s.ln1_out = on.A(n * d * e, Site::kLayerNorm);
    s.mean1 = on.A(n * 4, Site::kLayerNormStats);
    s.rstd1 = on.A(n * 4, Site::kLayerNormStats);
    if (steps_ == 0 && l == 0) {
      // The first matrix product: cuBLAS's handle, stream and workspaces (kept).
      p.library_stream(on.t);
      on.cublas_buffers();
    }
    s.qkv = on.A(n * 3 * d * e, Site::kLinear);
    s.rng = on.A(16, Site::kRngState);
    s.attn = on.A(n * d * e, Site::kAttention);
    s.lse = on.A(shape_.batch * heads * seq_ * 4, Site::kAttentionStats);
    const std::uintptr_t proj = on.A(n * d * e, Site::kLinear);
    s.mask1 = on.A(n * d, Site::kDropoutMask);
    s.x1 = on.A(n * d * e, Site::kResidualAdd);
    on.F(proj);
    s.ln2_out = on.A(n * d * e, Site::kLayerNorm);
    s.mean2 = on.A(n * 4, Site::kLayerNormStats);
    s.rstd2 = on.A(n * 4, Site::kLayerNormStats);
    s.h = on.A(n * 4 * d * e, Site::kLinear);
    s.g = on.A(n * 4 * d * e, Site::kGelu);
    const std::uintptr_t out = on.A(n * d * e, Site::kLinear);
    s.mask2 = on.A(n * d, Site::kDropoutMask);
    x = on.A(n * d * e, Site::kResidualAdd);
    on.F(out);
  }
  final_[0] = x;
  final_[1] = on.A(n * d * e, Site::kLayerNorm);
  final_[2] = on.A(n * 4, Site::kLayerNormStats);
  final_[3] = on.A(n * 4, Site::kLayerNormStats);
  logits_ = on.A(n * shape_.vocab * e, Site::kLogits);
  const std::uintptr_t upcast = on.A(n * shape_.vocab * 4, Site::kLossUpcast);
  log_probs_ = on.A(n * shape_.vocab * 4, Site::kLossUpcast);
  on.F(upcast);
  loss_ = on.A(4, Site::kLossScalar);
  total_weight_ = on.A(4, Site::kLossScalar);
}

// Autograd's thread: the loss's gradient (3), the output projection (2), the final layer norm
// (4), 28 a layer (12 of them weight gradients, kept until zero_grad), the embeddings (3).
void TrainingLoop::backward(Program& p, std::vector<Saved>& saved) {
  const On on{p, Thread::kAutograd};
  const std::size_t n = tokens_, d = shape_.hidden, e = kElement, heads = heads_of(d);
  grads_.assign(weights_.size(), 0);
  const std::uintptr_t grad_loss = on.A(4, Site::kLossScalar);
  const std::uintptr_t d_log_probs = on.A(n * shape_.vocab * 4, Site::kLossUpcast);
  on.F(grad_loss);
  on.F(total_weight_);
  on.F(log_probs_);
  const std::uintptr_t d_logits = on.A(n * shape_.vocab * e, Site::kLogits);
  on.F(d_log_probs);
  if (!autograd_blas_) {
    // This thread's first matrix product: its own cuBLAS handle and workspaces (kept).
    autograd_blas_ = true;
    on.cublas_buffers();
  }
  const std::uintptr_t d_final_out = on.A(n * d * e, Site::kLinearGradInput);
  grads_[0] = on.A(weights_[0], Site::kLinearGradWeight);  // the tied embedding's gradient
  on.F(d_logits);
  on.F(logits_);
  on.F(final_[1]);
  std::uintptr_t d_x = on.A(n * d * e, Site::kLayerNormGrad);
  const std::size_t last = weights_.size() - 2;
  grads_[last] = on.A(weights_[last], Site::kLayerNormGradParams);
  grads_[last + 1] = on.A(weights_[last + 1], Site::kLayerNormGradParams);
  on.F(on.A(odd_temporary(), Site::kReductionWorkspace));
  on.F(d_final_out);
  on.F(final_[2]);
  on.F(final_[3]);
  on.F(final_[0]);
  for (std::size_t l = shape_.layers; l-- > 0;) {
    const Saved& s = saved[l];
    std::uintptr_t* g = &grads_[2 + l * kLayerWeights];
    // A linear layer's backward: the gradient of its input (bytes), of its weight and its bias.
    auto linear = [&](std::size_t bytes, Weight w) {
      const std::uintptr_t d_in = on.A(bytes, Site::kLinearGradInput);
      g[w] = on.A(weights_[2 + l * kLayerWeights + w], Site::kLinearGradWeight);
      g[w + 1] = on.A(weights_[2 + l * kLayerWeights + w + 1], Site::kLinearGradBias);
      return d_in;
    };
    // A layer norm's backward (its weight and bias gradients, a reduction's workspace), then the
    // upstream gradient and the saved statistics are freed.
    auto norm = [&](Weight w, std::uintptr_t upstream, std::uintptr_t mean, std::uintptr_t rstd) {
      const std::uintptr_t d_in = on.A(n * d * e, Site::kLayerNormGrad);
      g[w] = on.A(weights_[2 + l * kLayerWeights + w], Site::kLayerNormGradParams);
      g[w + 1] = on.A(weights_[2 + l * kLayerWeights + w + 1], Site::kLayerNormGradParams);
      on.F(on.A(odd_temporary(), Site::kReductionWorkspace));
      on.F(upstream);
      on.F(mean);
      on.F(rstd);
      return d_in;
    };
    // A residual sum's backward: the two gradients summed, then they and the saved input freed.
    auto residual = [&](std::uintptr_t a, std::uintptr_t b, std::uintptr_t saved_input) {
      const std::uintptr_t sum = on.A(n * d * e, Site::kResidualAdd);
      on.F(a);
      on.F(b);
      on.F(saved_input);
      return sum;
    };
    // Dropout, then the second MLP projection.
    const std::uintptr_t d_out = on.A(n * d * e, Site::kResidualAdd);
    on.F(s.mask2);
    const std::uintptr_t d_g = linear(n * 4 * d * e, kFc2W);
    on.F(d_out);
    // GELU, the first MLP projection, the second layer norm.
    const std::uintptr_t d_h = on.A(n * 4 * d * e, Site::kGeluGrad);
    on.F(d_g);
    on.F(s.g);
    on.F(s.h);
    const std::uintptr_t d_ln2 = linear(n * d * e, kFc1W);
    on.F(d_h);
    on.F(s.ln2_out);
    const std::uintptr_t d_x1a = norm(kLn2W, d_ln2, s.mean2, s.rstd2);
    const std::uintptr_t d_x1 = residual(d_x1a, d_x, s.x1);  // the gradient of x1
    // Dropout, the attention's output projection, flash attention, the QKV projection.
    const std::uintptr_t d_proj = on.A(n * d * e, Site::kResidualAdd);
    on.F(s.mask1);
    const std::uintptr_t d_attn = linear(n * d * e, kProjW);
    on.F(d_proj);
    const std::uintptr_t d_qkv = on.A(n * 3 * d * e, Site::kAttentionGrad);
    const std::uintptr_t accum = on.A(n * d * 4, Site::kAttentionGradAccum);
    const std::uintptr_t softmax_d =
        on.A(shape_.batch * heads * seq_ * 4, Site::kAttentionGradAccum);
    on.F(accum);
    on.F(softmax_d);
    on.F(d_attn);
    on.F(s.attn);
    on.F(s.lse);
    on.F(s.rng);
    const std::uintptr_t d_ln1 = linear(n * d * e, kQkvW);
    on.F(d_qkv);
    on.F(s.qkv);
    on.F(s.ln1_out);
    // The first layer norm and the residual sum: the gradient of the layer's input.
    const std::uintptr_t d_xa = norm(kLn1W, d_ln1, s.mean1, s.rstd1);
    d_x = residual(d_xa, d_x1, s.x);
  }
  // The embeddings: the token gradient goes into the tied weight's (sorted indices), and the
  // position embedding's gradient.
  on.F(on.A(n * 8, Site::kIndexSort));
  on.F(on.A(n * 8, Site::kIndexSort));
  grads_[1] = on.A(weights_[1], Site::kEmbeddingGrad);
  on.F(d_x);
}

// Main thread: clip_grad_norm_ (P norms, their stack, the total, the coefficient and its clamp:
// P + 4), the foreach Adam step (a temporary the size of each weight: P; on the first step also
// exp_avg and exp_avg_sq, kept), zero_grad (every gradient freed), the batch freed, and the wait
// for the next batch.
void TrainingLoop::optimizer_step(Program& p) {
  const On on{p, Thread::kMain};
  std::vector<std::uintptr_t> temps;
  temps.reserve(weights_.size());
  for (std::size_t i = 0; i < weights_.size(); ++i) temps.push_back(on.A(4, Site::kGradNorm));
  const std::uintptr_t stacked = on.A(weights_.size() * 4, Site::kGradNorm);
  const std::uintptr_t total = on.A(4, Site::kClipScalar);
  for (std::uintptr_t ptr : temps) on.F(ptr);
  on.F(stacked);
  const std::uintptr_t coef = on.A(4, Site::kClipScalar);
  const std::uintptr_t clamped = on.A(4, Site::kClipScalar);
  on.F(coef);
  on.F(clamped);
  on.F(total);
  if (!optimizer_made_) {
    optimizer_made_ = true;
    for (std::size_t bytes : weights_) {
      on.keep(bytes, Site::kOptimizerState);
      on.keep(bytes, Site::kOptimizerState);
    }
  }
  temps.clear();
  for (std::size_t bytes : weights_) temps.push_back(on.A(bytes, Site::kAdamTemp));
  for (std::uintptr_t ptr : temps) on.F(ptr);
  for (std::uintptr_t ptr : grads_) on.F(ptr);
  grads_.clear();
  on.F(ids_);
  on.F(labels_);
  on.F(loss_);
  p.idle(rng_.between(40, 80) * 1000000);
}

}  // namespace cudapool::bench
