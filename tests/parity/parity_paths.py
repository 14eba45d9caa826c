# SPDX-License-Identifier: Apache-2.0
"""tests/parity/parity_paths.py: where a case's trace is. A relative "trace" of a cases file is
found below the repository (the committed cases name tests/parity/traces/...) or, failing that,
beside the cases file itself, so that anyone's cases file with its own traces works."""
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def resolve_trace(trace, cases_file):
    if os.path.isabs(trace):
        return trace
    in_repo = os.path.join(REPO, trace)
    if os.path.exists(in_repo) or not cases_file:
        return in_repo
    return os.path.join(os.path.dirname(os.path.abspath(cases_file)), trace)
