#!/usr/bin/env python3
"""shardlog vs Apache Kafka, same machine, same run, same clients (see shared PERF.md).

Started by scripts/bench (which checks the cache and builds shardlog); run that, not
this file. Standard library only, except matplotlib for the chart (perf/cache/venv).
The harness itself is the package perf/shardbench/ (see its __init__ for the modules);
this file only calls shardbench.cli.main.
"""

import sys

from shardbench.cli import main
from shardbench.common import say

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
