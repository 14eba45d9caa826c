# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis.version: the version the Python side prints for --version. Written once here for
Python; CMakeLists.txt's project(VERSION) is the same number for the C++ side, and a test checks
that the two agree. Not here: what each command prints around it."""

VERSION = "0.1.0"
