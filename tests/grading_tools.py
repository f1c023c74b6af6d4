"""The project's tools (tools/*.py, not a package) loaded as modules for the grading tests."""

import importlib.util
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def load_tool(name):
    """``tools/<name>.py`` as a module registered under ``name`` (dataclasses look their module up, and grade.py
    imports assignments by that name)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
