# The two entry points of the README's Quick start. Both do all set-up on a
# fresh machine: install what is missing (scripts/setup.sh), configure once,
# build incrementally.
#
#   make demo   compile examples/mlp.onnx with kilnc, link it into a C app, run it
#   make test   the whole suite through CTest (lit, GoogleTest, end-to-end,
#               ONNX conformance against test/conformance/expected-passing.txt)
#   make conformance   rerun the ONNX suite and rewrite docs/conformance.md
#   make bench         time Kiln, ONNX Runtime and PyTorch; rewrite docs/performance.md
#   make bench-data-parallel  1 -> 2 MPI ranks of a training step; its section of docs/performance.md
#   make bench-compile kilnc's wall time and peak memory on one core; its section of docs/performance.md
#   make bench-dims    range artifacts (--dim NAME=LO..HI) against static ones; its section of docs/performance.md
#   make zoo           export ~120 models from torchvision/transformers (PyPI) and the
#                      classic ONNX zoo's style, compile, compare with ONNX Runtime;
#                      rewrite docs/zoo.md (about an hour; ZOO_ONLY=REGEX for a part)
#   make gpu-pack      write build/gpu-pack, the CUDA check to carry to a GPU machine
#                      (tools/gpu-pack/README.md); build/gpu-pack/run.sh --emulate runs it here

BUILD ?= build
JOBS ?= $(shell nproc)
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=

.PHONY: all setup configure build demo test conformance bench bench-data-parallel bench-compile bench-dims zoo gpu-pack sanitize fuzz clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja: | setup
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j$(JOBS)

demo: build
	@echo "== kilnc examples/mlp.onnx -o $(BUILD)/examples/mlp  (mlp.h + mlp.o), linked into mlp_demo =="
	$(BUILD)/bin/mlp_demo examples/mlp_input.bin

# After the run, the reason of every part that was skipped (no GPU, no torch
# for the zoo's slice, pytest skips), from the tests' own output.
test: build
	@cd $(BUILD) && { ctest --output-on-failure -j$(JOBS); rc=$$?; \
	  grep -hE '^([a-z][a-z.-]*: .*skipped|SKIPPED \[)' Testing/Temporary/LastTest.log 2>/dev/null \
	    | sort -u | sed 's/^/make test: /'; exit $$rc; }

# Rerun the ONNX backend suite; rewrite docs/conformance.md,
# docs/supported-ops.md and the list of passing tests that `make test` holds
# the line on.
conformance: build
	$(BUILD)/bin/kiln-conformance --suite ../shared/onnx-backend-tests -j $(JOBS) \
	  --report docs/conformance.md --supported-ops docs/supported-ops.md \
	  --write-expect test/conformance/expected-passing.txt

# Kiln against ONNX Runtime and PyTorch on the bench/ model set, measured in
# one run; rewrites docs/performance.md.
bench: build
	@scripts/setup.sh --bench
	.venv/bin/python bench/run.py --build $(BUILD) --write docs/performance.md
	.venv/bin/python bench/train_step.py --build $(BUILD) --write docs/performance.md
	.venv/bin/python bench/data_parallel.py --build $(BUILD) --write docs/performance.md

# kilnc's wall time and peak memory on one core, the bench models and large
# zoo models (exported like `make zoo`); its section of docs/performance.md.
bench-compile: build
	@scripts/setup.sh --zoo
	.venv/bin/python bench/compile_time.py --build $(BUILD) --write docs/performance.md

# One artifact compiled for a range of sizes (--dim NAME=LO..HI) against a
# static compile at each size; its section of docs/performance.md.
bench-dims: build
	@scripts/setup.sh
	.venv/bin/python bench/dims.py --build $(BUILD) --write docs/performance.md

# Weak scaling of a data-parallel training step from 1 to 2 MPI ranks and
# the part of the all-reduce compute hides; its section of
# docs/performance.md.
bench-data-parallel: build
	@scripts/setup.sh
	.venv/bin/python bench/data_parallel.py --build $(BUILD) --write docs/performance.md

# The model zoo (test/zoo): every configuration in its own process, one at a
# time so the latencies are not disturbed; fails when a configuration listed
# in test/zoo/expected.txt no longer passes. ZOO_ONLY=REGEX runs a part (the
# report then covers that part only: do not commit it).
ZOO_JOBS ?= 1
ZOO_ONLY ?=
zoo: build
	@scripts/setup.sh --zoo
	.venv/bin/python test/zoo/zoo.py --build $(BUILD) --jobs $(ZOO_JOBS) \
	  $(if $(ZOO_ONLY),--only '$(ZOO_ONLY)') \
	  --write docs/zoo.md --expect test/zoo/expected.txt

# Every CPU-passing ONNX backend test, the bench models and a training step
# compiled for CUDA, with a runner that needs no LLVM: carry build/gpu-pack
# to a GPU machine and run ./run.sh there.
gpu-pack: build
	tools/gpu-pack/build.sh $(BUILD)

# The unit, lit and end-to-end tests under AddressSanitizer and
# UndefinedBehaviorSanitizer, in their own build folder (clang, so the same
# folder also builds the fuzzers).
ASAN_BUILD ?= build-asan
FUZZ_SECONDS ?= 60
$(ASAN_BUILD)/build.ninja: | setup
	CC=clang CXX=clang++ cmake -G Ninja -S . -B $(ASAN_BUILD) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON $(CMAKE_FLAGS)

sanitize: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS)

# Each fuzzer for FUZZ_SECONDS, from seeds made out of the test models.
fuzz: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD) -j$(JOBS) kiln-fuzz-import kiln-fuzz-artifact kiln-fuzz-tensor-file kiln-fuzz-model kilnc
	fuzz/run.sh $(ASAN_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
