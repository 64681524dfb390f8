# SPDX-License-Identifier: Apache-2.0
"""The `kcache` console script of the wheel: runs the kcache command shipped in the package.

The one idea: exec kcache/bin/kcache with the same arguments (its exit status is the script's).
Callers: the console script entry point.  Must not: parse or change the arguments.
"""
from __future__ import annotations

import os
import sys


def main() -> None:
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kcache")
    if not os.access(exe, os.X_OK):
        sys.exit(f"kcache: the kcache command is not in this installation ({exe})")
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
