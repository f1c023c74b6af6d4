"""Fixtures for the browser tests: Python Playwright drives Debian's Chromium against a JupyterLab started here.

Nothing here starts unless a browser test is selected (pytest sets fixtures up lazily), so a run that does not
collect ``tests/browser`` pays nothing. The browser and the server are shared by the tests of a module and ended
right after its last test (module scope, not session): while Playwright's sync API is alive it marks the main
thread's asyncio loop as running (playwright/_impl/_greenlets.py), so ``asyncio.run`` and jupyter_core's
``run_sync`` would behave differently for the nbval and nbclient tests that follow in the same pytest run.

- ``chromium_executable``: ``$CHROMIUM`` when it is set (then it must name an executable: a wrong value is not
  silently replaced by another browser), else ``chromium`` on PATH. Missing: the tests SKIP with the reason, or
  FAIL when ``CI=true`` (CI installs Debian's chromium in .ci/run, so a missing one there is a broken CI).
- ``browser``: that Chromium, headless, launched by Playwright; a playwright package that cannot be imported or
  cannot launch the browser is handled like a missing Chromium (skip; fail under CI).
- ``lab_server``: ``jupyter lab`` from this environment on 127.0.0.1 at a free port, without a token (for the
  test only), serving a temporary COPY of ``labs/`` and ``notebooks/`` with its own settings (autosave off),
  workspaces, runtime and config folders, so the browser never writes into the repository and a developer's own
  Jupyter settings do not change the result. Its output goes to a log file whose tail is added to the report
  of a failed test. Chromium is launched while the server starts. The server is stopped after the module's tests
  (terminate, then kill), also after a failure.
- ``page``: a new browser page per test; kernels started by the test are shut down after it. Console errors and
  uncaught page errors are added to the report of a failed test.
- ``artifacts_dir``: where screenshots go: ``$BROWSER_ARTIFACTS`` if set, else a pytest temporary folder
  (never the repository); each test prints the folder (shown with ``-rP`` or ``-s``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What the browser gets to see: copies of these folders (the repository's files are never served).
SERVED_FOLDERS = ("labs", "notebooks")

SKIP_REASON = "Debian's chromium is not installed (apt-get install chromium); CI installs it"
# Playwright adds --headless, --no-sandbox (as root) and its automation flags itself.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
SERVER_START_TIMEOUT_S = 90
LOG_TAIL_LINES = 80

# JupyterLab user settings for the test server (a settings folder of its own): never save the notebooks (the
# served files are copies anyway), and no news or update prompts over the page.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def unavailable(reason: str, ci_reason: str | None = None) -> None:
    """A browser-test prerequisite is missing: skip with ``reason``, or fail under CI (``CI=true``), where it must
    be present, with ``ci_reason`` (default: ``reason``)."""
    if in_ci():
        pytest.fail(f"CI=true, so the browser tests must run, but {ci_reason or reason}", pytrace=False)
    pytest.skip(reason)


def find_chromium() -> tuple[str | None, str]:
    """(path of the Chromium to use or None, what was looked at)."""
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return shutil.which(explicit), f"CHROMIUM={explicit!r} is not an executable"
    return shutil.which("chromium"), "no `chromium` on PATH"


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"(cannot read {path}: {error})"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LabServer:
    """A running ``jupyter lab``: its ``url``, served ``root_dir`` and ``log`` file."""

    def __init__(self, process: subprocess.Popen, url: str, root_dir: Path, log: Path):
        self.process, self.url, self.root_dir, self.log = process, url, root_dir, log

    def api(self, method: str, path: str, timeout: float = 10):
        request = urllib.request.Request(f"{self.url}{path}", method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_until_ready(self, timeout_s: float) -> None:
        """Poll ``/api/status`` until it answers; RuntimeError if the server exits or does not answer in time."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with status {self.process.returncode}")
            try:
                self.api("GET", "/api/status", timeout=2)
                return
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no answer on {self.url}/api/status after {timeout_s} s") from None
                time.sleep(0.25)

    def shutdown_kernels(self) -> None:
        """End every session (and its kernel) that the browser started: the next notebook starts from scratch."""
        try:
            for session in self.api("GET", "/api/sessions"):
                self.api("DELETE", f"/api/sessions/{session['id']}")
        except (OSError, ValueError):
            pass  # the server is gone: its teardown reports that

    def stop(self) -> None:
        """Terminate the server (it shuts its kernels down first); kill it if it has not exited 15 s later.
        A kernel whose server is gone ends by itself (ipykernel watches its parent process)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def chromium_executable() -> str:
    path, looked_at = find_chromium()
    if path is None:
        unavailable(
            f"{SKIP_REASON} [{looked_at}]",
            f"Debian's chromium was not found [{looked_at}]: .ci/run installs it (SYSTEM_PACKAGES=(chromium) "
            f"in .ci/run); locally: apt-get install chromium",
        )
    return path


@pytest.fixture(scope="module")
def browser(chromium_executable):
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        unavailable(f"the playwright Python package cannot be imported ({error}); `make test` installs it")
    try:
        playwright = sync_playwright().start()
    except Exception as error:  # any reason the driver cannot start means "no browser tests"
        unavailable(f"Playwright's driver cannot start: {error}")
    try:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable, headless=True, args=CHROMIUM_ARGS, timeout=60_000
        )
    except PlaywrightError as error:
        playwright.stop()
        first_lines = "\n".join(str(error).splitlines()[:12])
        unavailable(f"Playwright cannot launch {chromium_executable}: {first_lines}")
    yield browser
    browser.close()
    playwright.stop()


@pytest.fixture(scope="module")
def browser_context(browser):
    # One context for the module: JupyterLab's static files are fetched once and then come from its cache. Tall
    # enough for a whole lab (controls, summary, figure) in the screenshots.
    context = browser.new_context(viewport={"width": 1360, "height": 1500}, device_scale_factor=1)
    yield context
    context.close()


def _write_lab_settings(settings_dir: Path) -> None:
    for relative, values in LAB_SETTINGS.items():
        target = settings_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory, chromium_executable, request):  # noqa: ARG001 (requested for its skip or failure)
    # chromium_executable first: without a browser there is no point in starting JupyterLab.
    jupyter = Path(sys.executable).parent / "jupyter"
    if not jupyter.exists():
        pytest.fail(f"{jupyter} does not exist: run the tests with the project's environment (make test)")
    base = tmp_path_factory.mktemp("jupyterlab")
    root_dir = base / "root"
    for folder in SERVED_FOLDERS:
        if (ROOT / folder).is_dir():
            shutil.copytree(
                ROOT / folder, root_dir / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
            )
    dirs = {name: base / name for name in ("settings", "workspaces", "runtime", "config", "data", "ipython")}
    for path in dirs.values():
        path.mkdir()
    _write_lab_settings(dirs["settings"])
    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}  # as `make test` / learners
    env.update(
        JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
        JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        IPYTHONDIR=str(dirs["ipython"]),
        PYTHONHASHSEED="0",
    )
    port = free_port()
    command = [
        str(jupyter),
        "lab",
        "--no-browser",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root_dir}",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        "--LabApp.expose_app_in_browser=True",
        "--ServerApp.terminals_enabled=False",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = base / "jupyterlab.log"
    with log.open("wb") as log_file:
        # start_new_session: a Ctrl-C in the terminal reaches pytest only, whose teardown then stops the server.
        process = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=root_dir,
            start_new_session=True,
        )
    server = LabServer(process, f"http://127.0.0.1:{port}", root_dir, log)
    try:
        # Playwright's driver and Chromium start while JupyterLab does (a few seconds less on 2 cores); a browser
        # that cannot start skips or fails the tests here, after the server is stopped.
        request.getfixturevalue("browser_context")
    except BaseException:
        server.stop()
        raise
    try:
        server.wait_until_ready(SERVER_START_TIMEOUT_S)
    except RuntimeError as error:
        server.stop()
        pytest.fail(
            f"JupyterLab did not start: {error}\n{' '.join(command)}\n--- {log} (tail) ---\n{log_tail(log)}",
            pytrace=False,
        )
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture(scope="module")
def artifacts_dir(tmp_path_factory) -> Path:
    configured = os.environ.get("BROWSER_ARTIFACTS")
    if configured:
        path = Path(configured).resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("browser-artifacts")


@pytest.fixture
def page(lab_server, browser_context, request):
    page = browser_context.new_page()
    page.set_default_timeout(30_000)
    messages: list[str] = []
    page.on(
        "console",
        lambda message: (
            messages.append(f"console.{message.type}: {message.text}") if message.type in ("error", "warning") else None
        ),
    )
    page.on("pageerror", lambda error: messages.append(f"uncaught page error: {error}"))
    request.node.stash[BROWSER_MESSAGES] = messages
    yield page
    page.close()
    lab_server.shutdown_kernels()


BROWSER_MESSAGES = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item):
    """A failed browser test's report gets the tail of JupyterLab's log and the page's console errors."""
    report = yield
    if report.failed:
        server = getattr(item, "funcargs", {}).get("lab_server")
        if isinstance(server, LabServer):
            report.sections.append(
                (f"JupyterLab log, last {LOG_TAIL_LINES} lines ({server.log})", log_tail(server.log))
            )
        messages = item.stash.get(BROWSER_MESSAGES, None)
        if messages:
            report.sections.append(("browser console errors and warnings", "\n".join(messages[-60:])))
    return report
