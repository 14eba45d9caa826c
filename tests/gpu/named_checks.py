# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/named_checks.py: the reporting of the Python GPU checks: one line per named check,
`PROGRAM: NAME ok|FAILED DETAIL`, then a last line `PROGRAM: ok` or `PROGRAM: FAILED: names`,
and the exit status (0 when every check passed). Not the checks themselves."""


class NamedChecks:
    def __init__(self, program, name_width):
        self.program = program
        self.name_width = name_width
        self.failures = []

    def __call__(self, name, ok, detail=""):
        print("%s: %-*s %s %s" % (self.program, self.name_width, name, "ok" if ok else "FAILED",
                                  detail))
        if not ok:
            self.failures.append(name)

    def finish(self):
        """Prints the last line; returns the exit status."""
        if self.failures:
            print("%s: FAILED: %s" % (self.program, ", ".join(self.failures)))
            return 1
        print("%s: ok" % self.program)
        return 0
