# lit configuration for Kiln's FileCheck tests. Each folder under test/ is a
# suite in the same config: IR/ (dialect round trips and verifier errors),
# Passes/ (one file per pass), Import/ (ONNX files made at test time by
# scripts), Codegen/ (lowering and artifacts) and e2e/ (compile, run, compare
# against an independent reference).
import os

import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Tests must not depend on the caller's locale or a user's numpy config.
config.environment["LC_ALL"] = "C"
# kilnc verifies the IR after every pass in the tests, not only after each
# stage as it does for users (docs/decisions/0028-verify-per-stage.md).
config.environment["KILN_VERIFY_EACH"] = "1"

config.substitutions.append(("%python", config.kiln_python))
config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%kiln_tools_dir", config.kiln_tools_dir))
config.substitutions.append(("%kiln_runtime_include", os.path.join(config.kiln_src_root, "runtime", "include")))
config.substitutions.append(("%kiln_runtime_lib", config.kiln_runtime_lib))
config.substitutions.append(("%onnx_backend_tests", config.onnx_backend_tests))
config.substitutions.append(("%cc", config.kiln_c_compiler))
# Tests that read the ONNX backend test data say REQUIRES: onnx-backend-tests
# and report UNSUPPORTED where the data is absent.
if os.path.isdir(os.path.join(config.onnx_backend_tests, "node")):
    config.available_features.add("onnx-backend-tests")
# `sanitize` in the AddressSanitizer build (make sanitize), where %cc builds
# instrumented programs; the few tests that cannot run so say UNSUPPORTED.
if config.kiln_sanitize:
    config.available_features.add("sanitize")

# `torch` where the test venv has PyTorch (scripts/setup.sh --zoo): tests of
# models exported by torch, as users make them, run there and are reported
# UNSUPPORTED elsewhere (CI's venv has no torch; `make zoo` says the same).
import subprocess
if subprocess.run([config.kiln_python, "-c", "import importlib.util, sys; "
                   "sys.exit(importlib.util.find_spec('torch') is None)"]).returncode == 0:
    config.available_features.add("torch")

# `mpi` where Open MPI's mpirun is installed (scripts/setup.sh does): the
# data-parallel tests run two ranks on this machine.
import shutil
if shutil.which("mpirun"):
    config.available_features.add("mpi")
    # Sessions and CI run as root, which mpirun refuses unless told.
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"

# CUDA: `nvrtc` where kilnc was built with the toolkit (CUDA artifacts can be
# compiled); `cuda-gpu` where an NVIDIA driver and device are present, so GPU
# tests run there and are reported UNSUPPORTED elsewhere, never passed.
config.substitutions.append(("%kiln_runtime_cuda_lib", config.kiln_runtime_cuda_lib))
config.substitutions.append(("%kiln_fake_cuda_dir", config.kiln_fake_cuda_dir))
config.substitutions.append(("%cuda_include", config.cuda_include))
config.substitutions.append(("%cuda_lib", config.cuda_lib))
if config.kiln_have_cuda:
    config.available_features.add("nvrtc")
    if os.path.exists("/proc/driver/nvidia/version") and os.path.exists("/dev/nvidiactl"):
        config.available_features.add("cuda-gpu")
