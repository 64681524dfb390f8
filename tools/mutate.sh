#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mutate.sh — the mutation run (tools/mutate.py, Python 3 standard library only): one-line mutants
# of the safety checks (tools/mutants.txt), each built in a scratch copy and run against the tests
# that must notice it.  Options as mutate.py's: --check, --list, --class C, --id ID, -j N, --timeout S.
set -euo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
exec python3 "$(dirname "$0")/mutate.py" "$@"
