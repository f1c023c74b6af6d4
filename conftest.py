"""pytest configuration for the whole repository (the settings themselves are in pyproject.toml)."""

import os

# The py:percent twins of the notebooks are not modules: --doctest-modules must not import them (the notebooks
# themselves run under nbval). labs/source/ holds the graded masters, which nbval does not run.
collect_ignore = ["labs/source"]
collect_ignore_glob = ["notebooks/*.py", "labs/*.py"]


def pytest_configure(config):
    # nbval's kernels inherit this environment. Give them the one the stored outputs were made in
    # (tools/execute_notebooks.py): a fixed set/dict order, and matplotlib's inline backend (MPLBACKEND
    # would replace it and drop every figure). `make test` sets the same; this covers a bare `pytest`.
    if getattr(config.option, "nbval", False):
        os.environ["PYTHONHASHSEED"] = "0"
        os.environ.pop("MPLBACKEND", None)
