#!/usr/bin/env bash
# Installs what Kiln needs to build and test, and only what is missing.
#
# Debian packages (LLVM/MLIR 22, protobuf, FlatBuffers, GoogleTest, Ninja, lld,
# oneDNN, Open MPI for data-parallel training's tests, PyTorch for exporting
# the GPU pack's models; clang and its sanitizer/libFuzzer runtimes for
# `make sanitize` and `make fuzz`; clang-format 14 for the format check,
# lint.format) go
# through apt and need root or sudo. The Python packages used only to
# make test models and reference numbers (onnx, onnxruntime, numpy) and to
# test the Python package (pytest; wheel, so pip builds it offline) go into a
# project-local virtual environment at .venv, so the system Python is untouched.
# Running it twice does nothing the second time.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KILN_VENV:-$root/.venv}"

debs=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
  libgtest-dev
  cmake ninja-build lld g++ make
  clang libclang-rt-14-dev clang-format-14
  zlib1g-dev libzstd-dev libdnnl-dev
  python3 python3-venv
  openmpi-bin
)
# PyTorch from Debian's package exports the GPU pack's bench models (`make
# gpu-pack`, which `make test` checks in emulation); `make bench` also times
# it (frozen TorchScript).
debs+=(python3-torch)

missing=()
for p in "${debs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "kiln setup: installing Debian packages: ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "kiln setup: error: these packages are missing and installing them needs root or" >&2
    echo "passwordless sudo: ${missing[*]}" >&2
    echo "run 'sudo scripts/setup.sh' once, or install them yourself" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python for test-model generation. Debian's interpreter is used on purpose:
# `python3` on PATH may be another one (pyenv), and lit itself runs on Debian's.
py=/usr/bin/python3
want_py=(onnx==1.20.1 numpy==2.3.5 onnxruntime==1.23.2 pytest==8.3.4 wheel==0.45.1)
stamp="$venv/.kiln-requirements"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "${want_py[*]}" ]]; then
  echo "kiln setup: preparing Python test environment in $venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${want_py[@]}"
  echo "${want_py[*]}" >"$stamp"
fi

# `make zoo` (test/zoo) builds its models from PyTorch, torchvision and
# transformers from PyPI (about 5 GiB with NVIDIA's libraries), into the same
# venv, and only when asked: `make test` runs the zoo's slice where they are
# there and says it skipped it where not.
# `make bench` (scripts/setup.sh --bench) times PyTorch 2.x from the same
# packages: eager, torch.compile and AOTInductor.
if [[ " $* " == *" --zoo "* || " $* " == *" --bench "* ]]; then
  want_zoo=(torch==2.15.0 torchvision==0.29.2 transformers==5.24.0 onnxscript==0.7.2)
  zoo_stamp="$venv/.kiln-zoo-requirements"
  if [[ "$(cat "$zoo_stamp" 2>/dev/null)" != "${want_zoo[*]}" ]]; then
    echo "kiln setup: installing the zoo's ${want_zoo[*]} into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${want_zoo[@]}"
    echo "${want_zoo[*]}" >"$zoo_stamp"
  fi
fi
