# The two entry points of the README's Quick start. Both do all set-up on a
# fresh machine: install what is missing (scripts/setup.sh), configure once,
# build incrementally.
#
#   make demo   compile examples/mlp.onnx with kilnc, link it into a C app, run it
#   make test   the whole suite through CTest (lit, GoogleTest, end-to-end,
#               ONNX conformance against test/conformance/expected-passing.txt)
#   make conformance   rerun the ONNX suite and rewrite docs/conformance.md

BUILD ?= build
JOBS ?= $(shell nproc)
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=

.PHONY: all setup configure build demo test conformance clean

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

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# Rerun the ONNX backend suite; rewrite docs/conformance.md,
# docs/supported-ops.md and the list of passing tests that `make test` holds
# the line on.
conformance: build
	$(BUILD)/bin/kiln-conformance --suite ../shared/onnx-backend-tests -j $(JOBS) \
	  --report docs/conformance.md --supported-ops docs/supported-ops.md \
	  --write-expect test/conformance/expected-passing.txt

clean:
	rm -rf $(BUILD)
