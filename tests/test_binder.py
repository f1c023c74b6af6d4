"""Binder builds the environment we expect.

`repo2docker --no-build --debug .` renders the Dockerfile that mybinder.org would build, without
Docker and without network, in about a second. The checks below read that Dockerfile.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The repo2docker installed in the same venv as this Python (the [test] extra); not resolved,
# so that .venv/bin/python finds .venv/bin/repo2docker.
REPO2DOCKER = Path(sys.executable).parent / "repo2docker"


@pytest.fixture(scope="module")
def rendered() -> str:
    assert REPO2DOCKER.exists(), f"{REPO2DOCKER} not found; install the [test] extra (`make test` does)"
    proc = subprocess.run(
        [str(REPO2DOCKER), "--no-build", "--debug", "."],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"repo2docker --no-build failed (exit {proc.returncode}); its output:\n{proc.stdout}"
    return proc.stdout


def test_binder_uses_python_3_11(rendered):
    # repo2docker logs the Python it picked from binder/environment.yml.
    assert "Building conda environment for python=3.11" in rendered, (
        "repo2docker did not pick Python 3.11; pin `python=3.11` in binder/environment.yml"
    )


def test_binder_installs_binder_environment_yml(rendered):
    assert re.search(r'env update -p \S+ --file "binder/environment\.yml"', rendered), (
        "the Binder image does not install binder/environment.yml; keep binder/environment.yml "
        "(a binder/ folder makes repo2docker ignore the root environment.yml)"
    )


def test_binder_environment_is_installed_before_the_repo_is_copied(rendered):
    # Then a commit that only changes notebooks or course_lib re-uses the cached environment.
    env_copy = rendered.find("COPY --chown=0:0 src/binder/environment.yml")
    env_update = rendered.find('--file "binder/environment.yml"')
    repo_copy = rendered.find("COPY --chown=0:0 src/ ")
    assert -1 < env_copy < env_update < repo_copy, (
        "binder/environment.yml is installed after the whole repo is copied, so every commit "
        "rebuilds the environment; keep local references (-e ., -r, -c) out of "
        "binder/environment.yml and install course_lib in binder/postBuild"
    )


def test_binder_runs_postbuild(rendered):
    assert "RUN ./binder/postBuild" in rendered, (
        "the Binder image does not run binder/postBuild, so course_lib is not installed; "
        "keep binder/postBuild (it runs `python -m pip install --no-deps -e .`)"
    )


def test_binder_runs_postbuild_on_the_copied_repo(rendered):
    # postBuild installs course_lib (-e .) and copies binder/overrides.json (no "fetch Jupyter news?" prompt) into
    # JupyterLab's settings: both need the repository's files, so it must run after they are copied.
    repo_copy = rendered.find("COPY --chown=0:0 src/ ")
    postbuild = rendered.find("RUN ./binder/postBuild")
    assert -1 < repo_copy < postbuild, "binder/postBuild runs before the repository is copied into the image"
