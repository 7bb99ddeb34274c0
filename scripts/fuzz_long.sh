#!/usr/bin/env bash
# A long kernel-fuzzing campaign: every C kernel against its numpy twin under ASan + UBSan (tests/test_fuzz_kernels.py),
# with fresh random examples each run instead of CI's fixed 50 per kernel.
#   scripts/fuzz_long.sh                  2000 examples per kernel, 2 workers
#   scripts/fuzz_long.sh 20000 -k conv    more examples, only the kernels whose test id matches "conv"
#   JOBS=8 scripts/fuzz_long.sh           more workers
# A failure prints the shrunk case and a @reproduce_failure blob to replay it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[ -x .venv/bin/python ] || ./dev setup
examples=2000
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  examples=$1
  shift
fi
export MCU_FUZZ_EXAMPLES=$examples MCU_FUZZ_RANDOM=1
exec .venv/bin/python -m pytest tests/test_fuzz_kernels.py -n "${JOBS:-2}" -q -p no:cacheprovider "$@"
