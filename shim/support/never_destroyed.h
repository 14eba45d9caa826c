// SPDX-License-Identifier: Apache-2.0
// shim/support/never_destroyed.h: storage for a global that must be usable before the shim's own
// static initializers run and after its static destructors ran. The dynamic loader runs the
// constructors of a preloaded library after those of the libraries it does not depend on, and such
// a library (cuBLASLt, for one) may call dlsym on the driver from its constructor: that reaches the
// shim and initializes it early. A global with a dynamic initializer would then be constructed a
// second time over the settings just read; one with a destructor could be used by a late free at
// exit after it was destroyed. NeverDestroyed<T> is constant-initialized (constinit, T's constexpr
// default constructor) and never runs T's destructor. Not a lazy singleton: there is no guard and
// no allocation.
#pragma once

namespace cudapool::shim {

template <class T>
class NeverDestroyed {
 public:
  constexpr NeverDestroyed() : value_() {}
  ~NeverDestroyed() {}  // T's destructor is never run
  NeverDestroyed(const NeverDestroyed&) = delete;
  NeverDestroyed& operator=(const NeverDestroyed&) = delete;

  T& get() { return value_; }
  const T& get() const { return value_; }

 private:
  union {
    T value_;
  };
};

}  // namespace cudapool::shim
