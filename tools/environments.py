"""`make lock` (after uv): environment.yml and binder/environment.yml written from requirements.lock.

Usage:

    python -m tools.environments [--check]

Both conda files pin, in their pip section, course_lib's runtime dependencies and the [lab] extra of pyproject.toml
(nothing test-only: they serve learners and Binder) at the versions requirements.lock gives on the course's Python
(COURSE_PLATFORM), each with a comment saying who uses the package (USES). With --check nothing is written: the exit
status is 1, with the file's name, if either file differs from what would be written.

>>> render("binder/environment.yml", {"numpy": "2.4.6"}).splitlines()[-1]
'      - numpy==2.4.6             # course_lib cost models and simulations (numpy arrays)'
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10; pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
COURSE_PYTHON = "3.11"
# The machine the course's Python runs on, for evaluating the lock's markers (uv's universal lock also pins
# Windows- and macOS-only packages, and splits some pins at a patch release, e.g. python_full_version < '3.11.5').
COURSE_PLATFORM = {
    "python_version": COURSE_PYTHON,
    "python_full_version": f"{COURSE_PYTHON}.9",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}
# Every package the environments pin, in the files' order, with who uses it (a learner reads this).
USES = {
    "numpy": "course_lib cost models and simulations (numpy arrays)",
    "matplotlib": "course_lib figures: rooflines, timelines, memory bars",
    "matplotlib-inline": "shows matplotlib figures inline in the notebooks",
    "ipywidgets": "sliders and controls of the labs",
    "jupyterlab": "the notebook interface the course is read in",
    "ipykernel": "the Python kernel that runs the notebooks",
    "jupytext": "keeps each notebook's .ipynb and its paired .py in sync",
    "otter-grader": "graded labs: grader.check(...) in the student notebooks",
    "mpi4py": "lesson 07 and lab 08: real collectives on MPI (course_lib.measure)",
    "mpich": "the MPI library and mpiexec that mpi4py runs on (lesson 07, lab 08)",
}
HEADERS = {
    "environment.yml": """\
# Conda environment for the course (local alternative to `make lab`):
#     conda env create -f environment.yml && conda activate parallelism-course
#     pip install --no-deps -e .        # then install course_lib itself, from the repo root
#
# Written by `make lock` (tools/environments.py) from requirements.lock: do not edit the pins by hand. They are in
# the pip section on purpose: the lock's versions (its pins for Python 3.11), and conda-forge builds may not exist
# for every exact pin. Conda only provides Python and pip. To change a pin: edit pyproject.toml and run `make lock`,
# which rewrites this file AND binder/environment.yml (tests/test_environments.py checks all three agree).
""",
    "binder/environment.yml": """\
# Binder (mybinder.org / repo2docker) environment. Because binder/ exists, repo2docker reads only
# this folder: it merges this file into its base conda env, then runs binder/postBuild, which
# installs course_lib with `pip install --no-deps -e .`.
#
# Written by `make lock` (tools/environments.py) from requirements.lock, like the root environment.yml, with the
# same pins and Python; tests/test_environments.py checks this. The pins are in the pip section because they are
# the lock's versions and conda-forge may not build every exact pin.
# No test-only packages here: Binder only runs the notebooks.
""",
}
PYTHON_COMMENT = {
    "environment.yml": "the course's Python; same as Binder and the lock's reference",
    "binder/environment.yml": "the course's Python; same as the root environment.yml",
}
COMMENT_COLUMN = 33  # the column at which each line's comment starts


def lock_pins(environment: dict[str, str] = COURSE_PLATFORM, lock: Path = LOCK) -> dict[str, str]:
    """{canonical name: version} that requirements.lock gives on one platform (a marker environment); a ValueError
    for a line that is not an exact pin, or a package pinned twice there."""
    pins: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate(environment):
            continue
        specifiers = list(requirement.specifier)
        if len(specifiers) != 1 or specifiers[0].operator != "==":
            raise ValueError(f"requirements.lock: {line!r} is not an exact pin; run `make lock`")
        name = canonicalize_name(requirement.name)
        if name in pins:
            raise ValueError(
                f"requirements.lock pins {name} twice for Python {environment['python_full_version']}; "
                "run `make lock` instead of editing it by hand"
            )
        pins[name] = specifiers[0].version
    return pins


def direct_dependencies(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The canonical names of course_lib's runtime dependencies and of its [lab] extra."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["lab"]
    return [canonicalize_name(Requirement(text).name) for text in requirements]


def _line(text: str, comment: str) -> str:
    return f"{text:<{COMMENT_COLUMN - 1}} # {comment}" if len(text) < COMMENT_COLUMN - 1 else f"{text} # {comment}"


def render(name: str, pins: dict[str, str]) -> str:
    """The text of the environment file ``name`` ("environment.yml" or "binder/environment.yml") pinning ``pins``
    ({package: version}, in USES's order; a ValueError for a package USES does not describe)."""
    unknown = sorted(set(pins) - set(USES))
    if unknown:
        raise ValueError(f"tools/environments.py: say in USES who uses {', '.join(unknown)}")
    lines = [
        HEADERS[name].rstrip("\n"),
        "name: parallelism-course",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        _line(f"  - python={COURSE_PYTHON}", PYTHON_COMMENT[name]),
        _line("  - pip", "installs the pinned packages below from PyPI"),
        _line("  - pip:", "exact versions, identical to requirements.lock"),
    ]
    lines += [_line(f"      - {package}=={pins[package]}", USES[package]) for package in USES if package in pins]
    return "\n".join(lines) + "\n"


def environment_files() -> dict[str, str]:
    """{file name: its text} for both environment files, from pyproject.toml and requirements.lock."""
    lock = lock_pins()
    missing = [name for name in direct_dependencies() if name not in lock]
    if missing:
        raise ValueError(f"requirements.lock has no pin for {', '.join(missing)}: run `make lock`")
    pins = {name: lock[name] for name in direct_dependencies()}
    return {name: render(name, pins) for name in HEADERS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is not up to date")
    args = parser.parse_args(argv)
    try:
        files = environment_files()
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    stale = [name for name, text in files.items() if (ROOT / name).read_text(encoding="utf-8") != text]
    if args.check:
        for name in stale:
            print(f"{name} is not what `make lock` writes from requirements.lock: run `make lock`", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        (ROOT / name).write_text(files[name], encoding="utf-8")
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
