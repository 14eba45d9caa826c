# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/__main__.py: `python3 -m cudapool_analysis COMMAND ...` runs cli.main(); the
command line is described there."""

import sys

from .cli import main

sys.exit(main())
