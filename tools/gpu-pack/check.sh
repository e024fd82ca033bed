#!/usr/bin/env bash
# CTest's gpu-pack.emulate: `make gpu-pack` and `build/gpu-pack/run.sh
# --emulate`, as CI must prove them on a machine without a GPU.
#
#   tools/gpu-pack/check.sh BUILD SUITE
#
# Exits 77 (skipped) when the ONNX backend tests are not at SUITE.
set -euo pipefail
build="$1"
suite="$2"
if [[ ! -d "$suite/node" ]]; then
  echo "gpu-pack: no ONNX backend tests at $suite: skipped"
  exit 77
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KILN_ONNX_BACKEND_TESTS="$suite" "$here/build.sh" "$build"
rm -rf "$build/gpu-pack-results"
OUT="$build/gpu-pack-results" "$build/gpu-pack/run.sh" --emulate
