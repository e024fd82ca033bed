"""Where kilnc and libkiln_runtime.so are: KILN_PREFIX, the build folder
recorded at install time, the build folder beside this source tree, PATH."""

import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    prefix = os.environ.get("KILN_PREFIX")
    if prefix:
        yield prefix
    try:
        from . import _build_dir  # written by setup.py when installed from a checkout
        yield _build_dir.BUILD_DIR
    except ImportError:
        pass
    # Run from the source tree: python/kiln -> ../../build
    yield os.path.join(_HERE, "..", "..", "build")


def kilnc():
    for root in _candidates():
        path = os.path.join(root, "bin", "kilnc")
        if os.access(path, os.X_OK):
            return os.path.abspath(path)
    found = shutil.which("kilnc")
    if found:
        return found
    raise FileNotFoundError("kiln: cannot find kilnc (set KILN_PREFIX to Kiln's install prefix)")


def runtime_library():
    for root in _candidates():
        for sub in ("lib", "lib64"):
            path = os.path.join(root, sub, "libkiln_runtime.so")
            if os.path.exists(path):
                return os.path.abspath(path)
    return "libkiln_runtime.so.0"  # the library path
