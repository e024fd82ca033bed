#!/usr/bin/env bash
# CTest's python.package: `pip install ./python` into a temporary folder
# (no network: the environment's setuptools builds it), then pytest on the
# installed package, found through what the install recorded and KILN_PREFIX
# (the build folder, which has the install layout: bin/kilnc, lib/). The
# torch.nn.Module test runs where the Python has torch, and skips, saying so,
# where it has not; with a second Python that has torch (Debian's, which
# scripts/setup.sh installs) the torch test runs there too.
#
#   python/tests/check.sh PYTHON BUILD [TORCH_PYTHON]
set -euo pipefail
py="$1"
build="$2"
torch_py="${3:-}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$py" -m pip install -q --no-deps --no-build-isolation --target "$work/site" "$src/python"
cd "$work"
export KILN_PREFIX="$build"
PYTHONPATH="$work/site" "$py" -m pytest -q -rs "$src/python/tests"
if [[ -n "$torch_py" ]] && "$torch_py" -c "import torch, numpy" 2>/dev/null; then
  PYTHONPATH="$work/site:$src/python/tests" "$torch_py" -c "
import test_torch; test_torch.test_torch_module(); print('torch.nn.Module through kiln.compile: ok')"
else
  echo "python.package: no second Python with torch and numpy: the torch test ran only where pytest has torch"
fi
