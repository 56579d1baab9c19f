"""Package data: the repository keeps kernels/ and profiles/ at the top level (one .cu + one .yaml per rung, one
YAML per GPU), and every build copies them into the wheel as gemmprof/_data/kernels and gemmprof/_data/profiles,
so `pip install .`, a wheel and an editable install all find them (gemmprof/catalog/paths.py looks there last)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DATA = ("kernels", "profiles")


class build_py_with_data(build_py):  # noqa: N801 (setuptools' command naming)
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install reads the checkout's own folders
            return
        for name in DATA:
            source, target = HERE / name, Path(self.build_lib) / "gemmprof" / "_data" / name
            if not source.is_dir():
                raise SystemExit(f"setup.py: {source} is missing: build from a gemmprof checkout or sdist")
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.cubin", "*.o"))


setup(cmdclass={"build_py": build_py_with_data})
