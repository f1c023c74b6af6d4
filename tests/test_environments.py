"""The pinned environments agree with each other and with requirements.lock.

environment.yml (conda, local), binder/environment.yml (Binder) and requirements.lock (the
Makefile's constraints, made by `make lock` with uv) each pin the course's packages. They must name the same
versions, or a learner on Binder, one using conda and one using `make lab` run different code.

And JupyterLab, with `make lab` as on Binder, opens without asking whether to fetch Jupyter news:
binder/overrides.json holds the course's settings, which the Makefile and binder/postBuild install.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tools import environments

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10; pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
ENV_FILES = {
    "environment.yml": ROOT / "environment.yml",
    "binder/environment.yml": ROOT / "binder" / "environment.yml",
}
LOCK = ROOT / "requirements.lock"
POSTBUILD = ROOT / "binder" / "postBuild"
OVERRIDES = ROOT / "binder" / "overrides.json"
COURSE_PYTHON = environments.COURSE_PYTHON
COURSE_PLATFORM = environments.COURSE_PLATFORM
NOTIFICATION = "@jupyterlab/apputils-extension:notification"
HOW_TO_UPDATE = "To update pins: edit pyproject.toml and run `make lock`, which writes both environment files."


def conda_and_pip(path: Path) -> tuple[list[str], list[str]]:
    """The conda specs and the pip entries of an environment file."""
    env = yaml.safe_load(path.read_text())
    conda, pip = [], []
    for dep in env.get("dependencies", []):
        if isinstance(dep, dict):
            pip.extend(dep.get("pip", []))
        else:
            conda.append(str(dep))
    return conda, pip


def pip_pins(path: Path) -> dict[str, str]:
    """{canonical name: version} of the pip section, which must hold only `name==version`."""
    _, entries = conda_and_pip(path)
    pins = {}
    for entry in entries:
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s=;,]+)", entry.strip())
        assert match, (
            f"{path.relative_to(ROOT)}: pip entry {entry!r} is not `name==version`; "
            "pin every package exactly and install course_lib with "
            "`pip install --no-deps -e .` (postBuild on Binder), not from this file"
        )
        pins[canonicalize_name(match[1])] = match[2]
    return pins


def lock_pins(environment: dict[str, str]) -> dict[str, str]:
    """{canonical name: version} that requirements.lock gives on one platform (marker environment)."""
    try:
        return environments.lock_pins(environment)
    except ValueError as error:
        pytest.fail(str(error), pytrace=False)


def test_lock_covers_the_course_python():
    pins = lock_pins(COURSE_PLATFORM)
    assert {"numpy", "jupyterlab", "pytest"} <= pins.keys(), (
        f"requirements.lock has no pins for Python {COURSE_PYTHON}; run `make lock`"
    )


@pytest.mark.parametrize("python", ["3.10.0", "3.11.0", "3.11.9", "3.12.0", "3.13.0", "3.14.0"])
def test_lock_pins_every_python_the_course_supports(python):
    # requires-python is >=3.10: the universal lock must pin the course's packages for each of them, once each
    # (lock_pins fails on a package pinned twice).
    environment = {**COURSE_PLATFORM, "python_version": python.rsplit(".", 1)[0], "python_full_version": python}
    pins = lock_pins(environment)
    assert {"numpy", "matplotlib", "ipywidgets", "jupyterlab", "otter-grader", "pytest"} <= pins.keys(), python
    if python.startswith("3.10"):
        assert pins["tomli"], "pytest needs tomli on Python 3.10"


@pytest.mark.parametrize("name", ENV_FILES)
def test_python_is_pinned_to_the_course_python(name):
    conda, _ = conda_and_pip(ENV_FILES[name])
    pythons = [spec for spec in conda if re.match(r"python\b", spec)]
    assert pythons == [f"python={COURSE_PYTHON}"], (
        f"{name}: the dependencies must list `python={COURSE_PYTHON}` once (found {pythons}); "
        "without a pin repo2docker falls back to its own default Python"
    )


def test_root_and_binder_pin_the_same_versions():
    root, binder = (pip_pins(path) for path in ENV_FILES.values())
    differences = {
        name: (root.get(name), binder.get(name))
        for name in root.keys() | binder.keys()
        if root.get(name) != binder.get(name)
    }
    assert not differences, (
        f"environment.yml and binder/environment.yml differ (package: (root, binder)): {differences}; "
        "make binder/environment.yml's pip section identical to the root file's"
    )


@pytest.mark.parametrize("name", ENV_FILES)
def test_environment_pins_match_the_lock(name):
    lock = lock_pins(COURSE_PLATFORM)
    for package, version in pip_pins(ENV_FILES[name]).items():
        assert package in lock, (
            f"{name} pins {package}, which requirements.lock does not have; "
            f"add it to pyproject.toml and run `make lock`. {HOW_TO_UPDATE}"
        )
        assert version == lock[package], (
            f"{name} pins {package}=={version} but requirements.lock has {package}=={lock[package]} "
            f"for Python {COURSE_PYTHON}. {HOW_TO_UPDATE}"
        )


@pytest.mark.parametrize("name", ENV_FILES)
def test_environment_pins_every_direct_dependency(name):
    # The notebooks need course_lib's runtime dependencies plus the [lab] extra, and nothing
    # test-only: the environment files serve learners (conda) and Binder.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {
        canonicalize_name(Requirement(r).name)
        for r in project["dependencies"] + project["optional-dependencies"]["lab"]
    }
    pinned = set(pip_pins(ENV_FILES[name]))
    assert pinned == wanted, (
        f"{name} must pin exactly the runtime and [lab] dependencies of pyproject.toml; "
        f"missing: {sorted(wanted - pinned)}, not in pyproject.toml: {sorted(pinned - wanted)}"
    )


@pytest.mark.parametrize("name", ENV_FILES)
def test_every_package_line_has_a_comment(name):
    # Read the raw text: YAML parsing drops comments.
    lines = ENV_FILES[name].read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("dependencies:"))
    uncommented = []
    for line in lines[start + 1 :]:
        if line and not line[0].isspace() and not line.startswith("-"):
            break  # the next top-level key ends the dependencies block
        if re.match(r"\s*-\s*[^\s#]", line) and "#" not in line:
            uncommented.append(line.strip())
    assert not uncommented, (
        f"{name}: every package line needs a `# comment` saying what uses the package; add one to: {uncommented}"
    )


@pytest.mark.parametrize("name", ENV_FILES)
def test_environment_file_is_what_make_lock_writes(name):
    # The pins, their order and their comments come from requirements.lock and tools/environments.py, not a hand.
    assert ENV_FILES[name].read_text(encoding="utf-8") == environments.environment_files()[name], (
        f"{name} is not what `make lock` writes from requirements.lock: run `make lock` (or "
        "`.venv/bin/python -m tools.environments`), and say in tools/environments.py USES who uses a new package"
    )


def test_postbuild_is_an_executable_bash_script_that_installs_without_deps():
    text = POSTBUILD.read_text()
    assert os.access(POSTBUILD, os.X_OK), (
        "binder/postBuild is not executable; run `chmod +x binder/postBuild` "
        "(or `git update-index --chmod=+x binder/postBuild`)"
    )
    assert text.splitlines()[0] in ("#!/bin/bash", "#!/usr/bin/env bash"), (
        "binder/postBuild must start with a bash shebang (#!/bin/bash)"
    )
    assert re.search(r"^\s*set -[a-z]*e", text, re.MULTILINE), (
        "binder/postBuild needs `set -euo pipefail`: repo2docker does not stop the build when a postBuild command fails"
    )
    assert re.search(r"^\s*python -m pip install --no-deps -e \.\s*$", text, re.MULTILINE), (
        "binder/postBuild must install course_lib with `python -m pip install --no-deps -e .`: "
        "the dependencies are pinned in binder/environment.yml and must not be re-resolved"
    )


def test_overrides_switch_off_the_jupyter_news_prompt():
    overrides = json.loads(OVERRIDES.read_text(encoding="utf-8"))
    assert overrides == {NOTIFICATION: {"fetchNews": "false"}}, (
        'binder/overrides.json must set fetchNews to the string "false" (JupyterLab\'s "Never"), and nothing else'
    )


def test_postbuild_installs_the_overrides_into_jupyterlab_settings():
    text = POSTBUILD.read_text()
    assert re.search(r"get_app_dir\(\).*\)/settings\"$", text, re.MULTILINE), (
        "binder/postBuild must compute JupyterLab's settings folder as get_app_dir()/settings"
    )
    assert re.search(r'^cp binder/overrides\.json "\$settings/overrides\.json"$', text, re.MULTILINE), (
        "binder/postBuild must copy binder/overrides.json to $settings/overrides.json"
    )


def test_this_environments_jupyterlab_never_asks_to_fetch_news(tmp_path):
    # What JupyterLab's settings API serves to the page in this environment (.venv under `make test`, where the
    # Makefile installed binder/overrides.json), with an empty user settings folder: the default of fetchNews is
    # "false", so no prompt asks about news. A fresh JupyterLab's default is "none" (ask).
    from jupyterlab.commands import get_app_dir
    from jupyterlab_server.settings_utils import get_settings

    app_dir = Path(get_app_dir())
    installed = app_dir / "settings" / "overrides.json"
    assert installed.exists(), f"{installed} is missing: `make test` and `make lab` install it (binder/overrides.json)"
    assert installed.read_text(encoding="utf-8") == OVERRIDES.read_text(encoding="utf-8"), (
        f"{installed} differs from binder/overrides.json: run `make test` or `make lab`, which copy it again"
    )
    settings, _ = get_settings(
        str(app_dir / "settings"), str(app_dir / "schemas"), str(tmp_path), schema_name=NOTIFICATION
    )
    assert settings["schema"]["properties"]["fetchNews"]["default"] == "false"
    assert settings["settings"].get("fetchNews", "false") == "false"
