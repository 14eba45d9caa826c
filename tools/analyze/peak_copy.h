// SPDX-License-Identifier: Apache-2.0
// tools/analyze/peak_copy.h: a state as it was at its latest peak, kept exactly in one pass
// although the peak is only known at the end. The state changes by operations (Op); each is
// applied to the live state and written to a journal. At a new peak the copy is brought up to
// the live state: by applying the journal when it is still held, else by copying the live state
// whole. The journal is dropped (and the next peak copies whole) once it is longer than twice the
// live state, so: every operation is written once and applied to the copy at most once, a whole
// copy only follows at least as many operations as it copies (the cost per operation is bounded
// by a constant, whatever the number of peaks), and the memory is the copy (at most the largest
// live state) and a journal at most twice the live state. State: copyable, with apply(const Op&)
// and size() (its entries). Not here: what the states are (layout.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace cudapool::analyze {

template <class State, class Op>
class PeakCopy {
 public:
  // An operation the live state has taken (live_size: its entries after it).
  void record(const Op& op, std::size_t live_size) {
    if (!journal_held_) return;
    journal_.push_back(op);
    if (journal_.size() > std::max(kMinJournal, 2 * live_size)) {
      journal_held_ = false;
      std::vector<Op>().swap(journal_);
    }
  }

  // The live state is at a new peak: the copy becomes it.
  void peak(const State& live) {
    if (journal_held_) {
      for (const Op& op : journal_) copy_.apply(op);
      journal_.clear();
    } else {
      copy_ = live;
      journal_held_ = true;
      ++whole_copies_;
    }
    reached_ = true;
  }

  bool reached() const { return reached_; }
  const State& at_peak() const { return copy_; }
  std::size_t whole_copies() const { return whole_copies_; }

 private:
  static constexpr std::size_t kMinJournal = 4096;
  State copy_;
  std::vector<Op> journal_;
  bool journal_held_ = true;
  bool reached_ = false;
  std::size_t whole_copies_ = 0;
};

}  // namespace cudapool::analyze
