#!/usr/bin/env bash
# `make gpu-pack`: writes BUILD/gpu-pack, the folder that is carried to a GPU
# machine and run there with ./run.sh (README.md beside this script).
#
#   tools/gpu-pack/build.sh BUILD
#
# Needs a built BUILD (kiln-conformance, kilnc, kiln-pack-run, the fake NVIDIA
# libraries), the project's .venv (ONNX Runtime) and Debian's python3-torch
# (the bench models are exported from PyTorch); scripts/setup.sh --gpu-pack
# installs both. Work files go to BUILD/gpu-pack-stage and are reused when
# the compiler has not changed since.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
pack="$build/gpu-pack"
stage="$build/gpu-pack-stage"
venv_py="${KILN_PYTHON:-$root/.venv/bin/python}"
torch_py="${KILN_TORCH_PYTHON:-/usr/bin/python3}"
suite="${KILN_ONNX_BACKEND_TESTS:-$root/../shared/onnx-backend-tests}"
limit_mib=60
jobs="$(nproc)"
start=$(date +%s)
say() { echo "gpu-pack: [$(($(date +%s) - start)) s] $*"; }

for tool in kiln-conformance kilnc kiln-pack-run; do
  [[ -x "$build/bin/$tool" ]] || { echo "gpu-pack: error: $build/bin/$tool is missing (build first)" >&2; exit 1; }
done
fakes="$build/test/unit/runtime/fake-driver"
for lib in libcuda.so.1 libcublasLt.so.13 libcudnn.so.9; do
  [[ -e "$fakes/$lib" ]] || { echo "gpu-pack: error: $fakes/$lib is missing (build the tests first)" >&2; exit 1; }
done
[[ -d "$suite/node" ]] || { echo "gpu-pack: error: no ONNX backend tests at $suite" >&2; exit 1; }

mkdir -p "$stage"
# A stage is redone when a tool that makes it is newer than its stamp.
fresh() {
  local tool
  [[ -f "$stage/$1.stamp" ]] || return 1
  for tool in kiln-conformance kilnc kiln-run; do
    [[ "$stage/$1.stamp" -nt "$build/bin/$tool" ]] || return 1
  done
}

# 1. Every ONNX backend test the CPU passes, compiled for sm_90 (+ PTX);
#    and, as tests of the same form, models compiled over ranges of sizes
#    (kilnc --dim NAME=LO..HI) whose data sets run at different sizes
#    (test/e2e/Inputs/make_dim_suite.py, ONNX Runtime's outputs).
if ! fresh conformance; then
  say "compiling the conformance tests for CUDA"
  rm -rf "$stage/conformance" "$stage/dims" "$stage/dims-suite"
  # A test the CUDA target refuses is left out of the pack (not-packed.txt);
  # only the known differences may be.
  rc=0
  "$build/bin/kiln-conformance" --suite "$suite" --target=cuda --gpu-arch=sm_90 -j "$jobs" \
    --only "$root/test/conformance/expected-passing.txt" --pack "$stage/conformance" \
    >"$stage/conformance.log" 2>&1 || rc=$?
  tail -n 1 "$stage/conformance.log"
  if ((rc == 1)); then
    unknown="$(cut -f1 "$stage/conformance/not-packed.txt" |
      grep -vxF -f <(grep -v '^#' "$root/test/conformance/cuda-known-differences.txt" | grep .) || true)"
    if [[ -n "$unknown" ]]; then
      echo "gpu-pack: error: not packed, and not a known CUDA difference:" >&2
      grep -F -f <(echo "$unknown") "$stage/conformance/not-packed.txt" >&2
      exit 1
    fi
  elif ((rc != 0)); then
    cat "$stage/conformance.log" >&2
    exit 1
  fi
  "$venv_py" "$root/test/e2e/Inputs/make_dim_suite.py" "$stage/dims-suite"
  "$build/bin/kiln-conformance" --suite "$stage/dims-suite" --folders dims --target=cuda --gpu-arch=sm_90 \
    -j "$jobs" --pack "$stage/dims" | tail -n 1
  cat "$stage/dims/manifest.txt" >>"$stage/conformance/manifest.txt"
  cp -r "$stage/dims/dims" "$stage/conformance/"
  cp "$stage"/dims/emulate-src/*.cpp "$stage/conformance/emulate-src/"
  touch "$stage/conformance.stamp"
fi

# 2. The bench models: exported from PyTorch, ONNX Runtime's CPU output as
#    the reference, compiled like the tests.
if ! fresh bench; then
  say "exporting the bench models (PyTorch) and their references (ONNX Runtime)"
  "$torch_py" "$root/tools/gpu-pack/make_bench.py" export "$stage/bench-suite"
  "$venv_py" "$root/tools/gpu-pack/make_bench.py" reference "$stage/bench-suite"
  rm -rf "$stage/bench"
  "$build/bin/kiln-conformance" --suite "$stage/bench-suite" --folders bench --target=cuda \
    --gpu-arch=sm_90 -j "$jobs" --pack "$stage/bench" | tail -n 3
  # The input is made again from packdata.py where the pack runs.
  rm -f "$stage"/bench/bench/*/0/in*.bin
  touch "$stage/bench.stamp"
fi

# 3. A training step: kilnc train --target=cuda, its batches, and the CPU
#    step's losses and final state as the reference.
if ! fresh train; then
  say "compiling the training step (CPU reference and CUDA)"
  rm -rf "$stage/train-work" "$stage/train"
  mkdir -p "$stage/train"
  "$venv_py" "$root/tools/gpu-pack/make_train.py" "$stage/train-work"
  t="$stage/train-work"
  train_flags=(train "$t/mlp_train.onnx" --loss=loss --optimizer=adam --lr=0.001)
  "$build/bin/kilnc" "${train_flags[@]}" --shared -o "$t/cpu"
  "$build/bin/kiln-run" "$t/cpu.so" --input "x=$t/x.npy" --input "labels=$t/labels.npy" \
    --steps "$(cat "$t/steps")" --output-dir "$t/cpu_out" --save-state "$t/state.bin" >/dev/null
  "$venv_py" -c 'import numpy, sys; numpy.load(sys.argv[1]).astype(numpy.float32).tofile(sys.argv[2])' \
    "$t/cpu_out/loss.npy" "$stage/train/losses.bin"
  cp "$t/state.bin" "$t/steps" "$stage/train/"
  cp -r "$t/batches" "$stage/train/"
  "$build/bin/kilnc" "${train_flags[@]}" --target=cuda --gpu-arch=sm_90 --shared -o "$stage/train/model_train"
  "$build/bin/kilnc" "${train_flags[@]}" --target=cuda --gpu-arch=sm_90 --emit=cuda-host \
    -o "$stage/train/model_train.host.cpp"
  # The same step, data-parallel: on one rank with NCCL it must give the
  # same losses and state.
  "$build/bin/kilnc" "${train_flags[@]}" --data-parallel --bucket-bytes=256K --target=cuda --gpu-arch=sm_90 \
    --shared -o "$stage/train/model_train_dp"
  "$build/bin/kilnc" "${train_flags[@]}" --data-parallel --bucket-bytes=256K --target=cuda --gpu-arch=sm_90 \
    --emit=cuda-host -o "$stage/train/model_train_dp.host.cpp"
  rm -f "$stage/train/model_train.h" "$stage/train/model_train.o" "$stage/train/model_train_dp.h" \
    "$stage/train/model_train_dp.o"
  touch "$stage/train.stamp"
fi

# 4. The pack.
say "writing $pack"
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/py" "$pack/emulate/lib" "$stage/emulate-src"
xzc() { XZ_OPT="-3 -T$jobs" tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cJf "$@"; }
xzc "$pack/conformance.tar.xz" -C "$stage/conformance" manifest.txt not-packed.txt node simple pytorch-operator pytorch-converted \
  dims
xzc "$pack/bench.tar.xz" -C "$stage/bench" manifest.txt bench
xzc "$pack/train.tar.xz" -C "$stage/train" model_train.so model_train.host.cpp model_train_dp.so \
  model_train_dp.host.cpp batches losses.bin state.bin steps
rm -rf "$stage/emulate-src"/*
cp "$stage"/conformance/emulate-src/*.cpp "$stage"/bench/emulate-src/*.cpp "$stage/emulate-src/"
xzc "$pack/emulate-src.tar.xz" -C "$stage" emulate-src
cp "$build/bin/kiln-pack-run" "$pack/bin/"
cp -L "$fakes/libcuda.so.1" "$fakes/libcublasLt.so.13" "$fakes/libcudnn.so.9" "$fakes/libnccl.so.2" \
  "$pack/emulate/lib/"
cp "$root/tools/gpu-pack/run.sh" "$root/tools/gpu-pack/README.md" "$pack/"
cp "$root/tools/gpu-pack/packdata.py" "$root/tools/gpu-pack/bench_gpu.py" "$root/tools/gpu-pack/summary.py" \
  "$pack/py/"
cp "$root/bench/models.py" "$pack/py/models.py"
grep -v '^#' "$root/test/conformance/cuda-known-differences.txt" | grep . >"$pack/known-differences.txt" || true
echo "sm_90 cubins + PTX; $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)" >"$pack/BUILT_FOR"
chmod +x "$pack/run.sh" "$pack/bin/kiln-pack-run"

# 5. What the pack promises: small enough to travel, no LLVM, MLIR or
#    protobuf in its programs.
if ldd "$pack/bin/kiln-pack-run" | grep -Ei 'llvm|mlir|protobuf'; then
  echo "gpu-pack: error: kiln-pack-run links LLVM, MLIR or protobuf" >&2
  exit 1
fi
size=$(du -sm "$pack" | cut -f1)
if ((size >= limit_mib)); then
  echo "gpu-pack: error: $pack is $size MiB, over the $limit_mib MiB that travels to a GPU machine" >&2
  exit 1
fi
say "$pack: $size MiB, $(grep -c . "$stage/conformance/manifest.txt") conformance tests," \
  "$(grep -c . "$stage/bench/manifest.txt") bench models, a training step"
