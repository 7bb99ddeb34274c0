"""Finds the packages under each folder that pyproject.toml's package-dir maps into `mcu` (mcu/ -> mcu,
codegen/ -> mcu.codegen, ...), so a new sub-package is installed without being listed by hand."""
from pathlib import Path

from setuptools import find_packages, setup

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).parent
PACKAGE_DIR = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

setup(packages=sorted({f"{name}.{sub}" if sub else name
                       for name, folder in PACKAGE_DIR.items()
                       for sub in ["", *find_packages(str(ROOT / folder))]}))
