"""Records, at install time, the build folder beside this source tree
(../build), so an installed `kiln` finds that build's kilnc and runtime
(kiln/_paths.py; KILN_PREFIX overrides it)."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPy(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "kiln", "_build_dir.py")
        with open(target, "w") as f:
            f.write(f"BUILD_DIR = {os.path.join(os.path.dirname(HERE), 'build')!r}\n")


setup(cmdclass={"build_py": BuildPy})
