// SPDX-License-Identifier: Apache-2.0
// tests/unit/main.cpp: Catch2 v2 needs one translation unit with its main; v3 links Catch2WithMain.
#if !defined(CUDAPOOL_CATCH3)
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#endif
