// SPDX-License-Identifier: Apache-2.0
// tests/unit/catch.h: one include for Catch2 v2 (Debian 12) and v3 (Ubuntu 24.04, the GPU image).
#pragma once
#if defined(CUDAPOOL_CATCH3)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
