#!/usr/bin/env bash
# The GPU pack's one command (see README.md beside it).
#
#   ./run.sh             on a machine with an NVIDIA GPU
#   ./run.sh --emulate   on this machine, without one: the same runner and
#                        runtime, with host stand-ins for the driver, cuBLASLt
#                        and cuDNN that run the kernels on the CPU
#   ./run.sh --only conformance|bench|train   one part
#
# Results go to $OUT when it is set (the device tool's folder), else to
# ./gpu-pack-results: summary.md (what ran and how it went), conformance.tsv
# (a line per test), bench.json, profile.txt (the bench models' time per
# step), train.txt and log.txt (every log). The exit status is 0 when everything ran; with --emulate it is 1
# when a conformance test (other than a known CUDA difference), a bench
# model or the training step does not match.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
emulate=0
only=""
while (($#)); do
  case "$1" in
    --emulate) emulate=1 ;;
    --only) only="${2:-}"; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
wants() { [[ -z "$only" || "$only" == "$1" ]]; }

results="${OUT:-$PWD/gpu-pack-results}"
mkdir -p "$results"
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-pack.XXXXXX")"
logs="$work/logs"
mkdir -p "$logs"
# Every log ends up in one file (the device tool brings back few files).
finish() {
  for f in "$logs"/*; do [[ -f "$f" ]] && { echo "==== ${f##*/}"; cat "$f"; }; done >"$results/log.txt" 2>/dev/null
  rm -rf "$work"
}
trap finish EXIT
runner="$here/bin/kiln-pack-run"
py="${KILN_PYTHON:-python3}"
start=$(date +%s)
say() { echo "[$(($(date +%s) - start)) s] $*"; }

unpack() { # archive folder
  mkdir -p "$2"
  if ! tar -xJf "$1" -C "$2" 2>/dev/null; then
    "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2" || {
      echo "run.sh: cannot unpack $1" >&2; exit 2; }
  fi
}

say "unpacking into $work"
for part in conformance bench train; do
  if wants "$part" && [[ -f "$here/$part.tar.xz" ]]; then unpack "$here/$part.tar.xz" "$work/$part"; fi
done

if ((emulate)); then
  export LD_LIBRARY_PATH="$here/emulate/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "emulated: host stand-ins for libcuda, cuBLASLt and cuDNN ($(uname -m), $(nproc) cores)" >"$logs/device.txt"
fi
if ((emulate)) && { wants conformance || wants bench; }; then
  # The kernels of every artifact built for the host, named by their cubin's
  # hash; the fake driver finds them there.
  unpack "$here/emulate-src.tar.xz" "$work"
  mkdir -p "$work/emulate-lib"
  say "building $(ls "$work/emulate-src" | wc -l) host kernel libraries"
  ls "$work/emulate-src" | sed 's/\.cpp$//' | xargs -P "$(nproc)" -I{} \
    "${CXX:-c++}" -std=c++17 -O1 -fPIC -shared -w -pthread -fno-strict-aliasing \
    "$work/emulate-src/{}.cpp" -o "$work/emulate-lib/{}.so" || { echo "run.sh: host build failed" >&2; exit 1; }
  export KILN_FAKE_CUDA_KERNELS="$work/emulate-lib"
elif ! ((emulate)); then
  { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    echo "pack built for: $(cat "$here/BUILT_FOR" 2>/dev/null)"; } >"$logs/device.txt"
fi
say "device: $(head -2 "$logs/device.txt" | tail -1)"

# cuBLASLt and cuDNN: the runtime looks on the library path, in the toolkit
# and in NVIDIA's Python wheels. If a probe model still cannot load them,
# name the wheels' folders and say so in the summary.
if ! ((emulate)) && wants conformance; then
  probe="$("$runner" conformance "$work/conformance" --tests node/test_matmul_2d,node/test_basic_conv_with_padding 2>&1)"
  echo "$probe" >"$logs/library-probe.txt"
  if grep -q "cannot be loaded" <<<"$probe"; then
    dirs="$("$py" -c 'import glob, os, site, sys
paths = site.getsitepackages() + [site.getusersitepackages()]
print(":".join(sorted({d for p in paths for d in glob.glob(os.path.join(p, "nvidia", "*", "lib"))})))' 2>/dev/null)"
    export KILN_CUDA_LIBRARY_PATH="$dirs"
    echo "the runtime did not find cuBLASLt/cuDNN by itself; KILN_CUDA_LIBRARY_PATH=$dirs" >>"$logs/library-probe.txt"
    say "fallback: KILN_CUDA_LIBRARY_PATH=$dirs"
  fi
fi

# The bench prepares PyTorch (torch.compile) while the conformance tests
# run, and times once they are done.
bench_pid=""
if wants bench; then
  flag="$work/conformance.done"
  wants conformance || touch "$flag"
  say "bench: preparing in the background"
  bench_args=(--bench "$work/bench" --runner "$runner" --out "$results/bench.json" --start-after "$flag"
              --profile "$results/profile.txt")
  ((emulate)) && bench_args+=(--emulate)
  # Bounded, so a hung peer cannot eat a GPU machine's lease.
  PYTHONUNBUFFERED=1 timeout "${KILN_BENCH_TIMEOUT:-420}" "$py" "$here/py/bench_gpu.py" "${bench_args[@]}" \
    >"$logs/bench.log" 2>&1 &
  bench_pid=$!
fi

if wants conformance; then
  say "conformance: $(grep -c . "$work/conformance/manifest.txt") tests"
  tsv="$results/conformance.tsv"
  : >"$tsv"
  after=()
  # Emulated kernels run thread by thread on the host, tens of times slower
  # than a GPU (pytorch-converted/test_MaxPool1d_stride_padding_dilation:
  # 21 s alone, past 30 s beside a build); emulation checks results, not
  # speed, so it waits longer than the runner's 30 s.
  limit=()
  ((emulate)) && limit=(--timeout 180)
  for attempt in $(seq 1 200); do
    "$runner" conformance "$work/conformance" --results "$tsv" "${limit[@]}" "${after[@]}" 2>>"$logs/conformance.log"
    rc=$?
    if ((rc == 0 || rc == 77)); then break; fi
    last="$(tail -n 1 "$tsv" | cut -f1)"
    if ((rc != 3 && rc != 4)); then
      # The process died inside the test after the last line written.
      if [[ -z "$last" ]]; then crashed="$(grep -m1 . "$work/conformance/manifest.txt")"
      else crashed="$(grep -A1 -x -F "$last" "$work/conformance/manifest.txt" | sed -n 2p)"; fi
      [[ -z "$crashed" ]] && break
      printf '%s\tcrash\tthe runner died (exit %s)\n' "$crashed" "$rc" >>"$tsv"
      last="$crashed"
    fi
    after=(--after "$last")
  done
  say "conformance: $(grep -c $'\tpass\t' "$tsv") of $(grep -c . "$tsv") pass"
fi
touch "$work/conformance.done"

# A training step ($1, in $work/train) against the CPU step's losses and
# state, into $results/$2; in emulation its kernels are built for the host.
run_train() {
  local env_=()
  if ((emulate)); then
    "${CXX:-c++}" -std=c++17 -O1 -fPIC -shared -w -pthread -fno-strict-aliasing \
      "$work/train/$1.host.cpp" -o "$work/train/$1.host.so"
    env_=(env KILN_FAKE_CUDA_KERNELS="$work/train/$1.host.so")
  fi
  # Float32 on both sides, cuBLASLt against the CPU's own kernels: 1e-3 of
  # each tensor's largest value (Adam divides by small moments).
  "${env_[@]}" "$runner" train "$work/train/$1.so" --steps "$(cat "$work/train/steps")" \
    --batch-dir "$work/train/batches" --expect-loss "$work/train/losses.bin" \
    --expect-state "$work/train/state.bin" --rtol 1e-3 >"$results/$2" 2>&1
  echo "exit $?" >>"$results/$2"
}

if wants train && [[ -d "$work/train" ]]; then
  say "training step"
  run_train model_train train.txt
  say "training step: $(tail -n 2 "$results/train.txt" | head -1)"
  # The data-parallel step on one rank: its buckets all-reduced by NCCL
  # (libnccl.so.2 from the toolkit or NVIDIA's wheel) on a side stream; the
  # same losses and state as the plain step.
  if [[ -f "$work/train/model_train_dp.so" ]]; then
    run_train model_train_dp train_dp.txt
    say "data-parallel training step (NCCL, 1 rank): $(tail -n 2 "$results/train_dp.txt" | head -1)"
  fi
fi

if [[ -n "$bench_pid" ]]; then
  say "bench: timing"
  wait "$bench_pid"
  echo "exit $?" >>"$logs/bench.log"
fi

"$py" "$here/py/summary.py" --results "$results" --logs "$logs" --manifest "$work/conformance/manifest.txt" \
  --known "$here/known-differences.txt" \
  ${only:+--only "$only"} $( ((emulate)) && echo --emulate)
status=$?
say "done"
exit $status
