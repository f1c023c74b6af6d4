# The course's task runner: the only way anything runs, locally and in CI (.ci/run calls `make test`).
# Needs only python3 (>= 3.10) and make; everything else is installed into .venv from PyPI,
# at the versions in requirements.lock.

PYTHON ?= python3
VENV = .venv
PYTEST_ARGS ?=
# uv (https://docs.astral.sh/uv/) installs and locks the packages: it is bootstrapped into .venv by the venv's own
# pip, at this version, so python3 and make stay the only prerequisites. It never downloads a Python of its own:
# it installs into .venv's interpreter, and `make lock` resolves for every Python from 3.10 up without one.
UV_VERSION = 0.13.9
UV = $(VENV)/bin/uv
UV_STAMP = $(VENV)/.uv-$(UV_VERSION)-installed
export UV_PYTHON_DOWNLOADS = never
# --compile-bytecode: uv writes no .pyc by default, and where PYTHONDONTWRITEBYTECODE is set (this course's CI image
# sets it) Python writes none either, so every process (each test worker, kernel and grading sandbox) compiled numpy,
# matplotlib, IPython, ... from source again: about 5 s of CPU a process.
UV_INSTALL = $(UV) pip install --compile-bytecode --python $(VENV)/bin/python -c requirements.lock
# The course's JupyterLab settings (no "fetch Jupyter news?" prompt), installed where JupyterLab reads the
# overrides of its own environment; binder/postBuild installs the same file on Binder.
LAB_OVERRIDES = $(VENV)/share/jupyter/lab/settings/overrides.json
# Jupyter refuses to start as root unless told to; pass --allow-root only when we are root.
ALLOW_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root,)

.DEFAULT_GOAL := help
.PHONY: help lab test quick nb check hooks validate bench notebooks assignments sync grade site serve-site lock clean

help: ## list the targets (this message)
	@echo "Targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 18

# root_dir: without it, Jupyter serves only the opened file's folder (notebooks/), hiding labs/.
lab: $(VENV)/.lab-installed $(LAB_OVERRIDES) ## open the course in JupyterLab (prints the URL with its login token)
	$(VENV)/bin/jupyter lab notebooks/00_course_map.ipynb --ServerApp.ip=127.0.0.1 \
		--ServerApp.root_dir="$(CURDIR)" $(ALLOW_ROOT)

# The notebooks' stored outputs were made with PYTHONHASHSEED=0 (set order) and without MPLBACKEND (inline
# figures); nbval's kernels inherit pytest's environment, so the tests run in the same one.
# The tests run on every core (pytest-xdist, one worker a core). Where notebooks or the grading tests run, a module
# at a time (--dist loadscope: a notebook's cells in one kernel; conftest.py's scheduler keeps the grading modules
# together), in the order conftest.py puts them (--no-loadscope-reorder: the longest first); the quick tier a test
# at a time (--dist load), which balances the two workers better.
# Without PYTHONDONTWRITEBYTECODE: pytest caches the assertion-rewritten test modules as .pyc, and Python caches
# course_lib's (in __pycache__/, which git ignores); with it set, every run rewrote and compiled them all again, in
# every worker (make quick: 72 s instead of 53 s here).
PYTEST = env -u MPLBACKEND -u PYTHONDONTWRITEBYTECODE PYTHONHASHSEED=0 $(VENV)/bin/python -m pytest -n auto
BY_MODULE = --dist loadscope --no-loadscope-reorder
# The tiers (markers in pyproject.toml, applied by path in conftest.py): `make quick` runs what has none of them.
QUICK = not (notebook or grading or browser or env or slow)
test: check $(LAB_OVERRIDES) ## run all tests, every tier: lint, unit, property, doctests, notebooks (nbval), grading, browser, environments
	$(PYTEST) $(BY_MODULE) $(PYTEST_ARGS)

# Without nbval (-p no:nbval, and addopts without its options): it only runs notebooks, and loading it costs each
# worker seconds (see conftest.py on rfc3987_syntax).
quick: $(VENV)/.test-installed ## the inner loop (under a minute): every test but the notebook, grading, browser, env and slow tiers
	$(PYTEST) --dist load -q -p no:nbval -o addopts="--doctest-modules -ra --strict-markers" -m "$(QUICK)" \
		--hypothesis-profile=quick tests course_lib $(PYTEST_ARGS)

# The lessons and masters whose stored outputs a change since BASE (default HEAD: the uncommitted change) may affect:
# its twin, a course_lib module it imports (directly or not), or what every notebook depends on
# (tools/changed_notebooks.py says which). `make nb BASE=main` checks a branch's whole change.
BASE ?= HEAD
nb: $(VENV)/.test-installed ## nbval on only the notebooks that a change since BASE (default HEAD) may affect
	@notebooks="$$($(VENV)/bin/python -m tools.changed_notebooks --base $(BASE))" || exit 2; \
	if [ -z "$$notebooks" ]; then echo "make nb: no lesson or master depends on an uncommitted change"; \
	else echo "make nb:" $$notebooks; $(PYTEST) $(BY_MODULE) -q $$notebooks $(PYTEST_ARGS); fi

# ruff's settings are in pyproject.toml: course_lib, tools, tests, benchmarks and the notebooks' .py twins.
# pyright's ([tool.pyright]): basic mode on the formula modules. The PyPI wrapper runs the pyright its wheel bundles
# with the machine's node (nodeenv downloads one if there is none); PYRIGHT_PYTHON_IGNORE_WARNINGS stops it asking
# PyPI at every run whether a newer wrapper exists.
check: $(VENV)/.test-installed ## lint, format check (ruff) and type check of the formula modules (pyright); `make test` runs it first
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	PYRIGHT_PYTHON_IGNORE_WARNINGS=1 $(VENV)/bin/pyright

# .pre-commit-config.yaml: local hooks only (ruff, tools/twins.py), run from .venv; pre-commit fetches nothing.
hooks: $(VENV)/.test-installed ## install the pre-commit hooks (ruff, notebooks in step with their .py twins)
	$(VENV)/bin/pre-commit install

validate: $(VENV)/.test-installed ## the model against published runs and the Ultra-Scale Playbook's (tools/validate.py)
	$(VENV)/bin/python -m tools.validate

bench: $(VENV)/.test-installed ## time course_lib's functions, the notebooks and grading (benchmarks/bench.py)
	env -u MPLBACKEND PYTHONHASHSEED=0 $(VENV)/bin/python -m benchmarks.bench

# After editing a lesson's .py: rebuild its .ipynb and store fresh outputs. NOTEBOOKS limits it to some files, each
# given as its .py or its .ipynb, e.g. make notebooks NOTEBOOKS=notebooks_py/01_mac.py (jupytext.toml pairs the
# lessons notebooks/X.ipynb with notebooks_py/X.py, each lab folder's jupytext.toml its master labs/X/X.ipynb with
# labs/X/X.py beside it). `make sync` does this for what an edit changed, then `make assignments` likewise.
NOTEBOOKS ?=
notebooks: $(VENV)/.test-installed ## re-execute the lessons and labs from their .py and store the outputs in the .ipynb
	PYTHONHASHSEED=0 $(VENV)/bin/python -m tools.execute_notebooks $(NOTEBOOKS)

# Graded labs (otter-grader 7). A lab is one folder, labs/NN_name/: its master NN_name.py/.ipynb (run
# `make notebooks NOTEBOOKS=...` after editing one, or `make sync`) and its wrong answers. Output: build/assignments/<lab>/student/<lab>.ipynb, build/assignments/<lab>/autograder/*.zip and
# the zip's SHA-256 in build/assignments/<lab>/autograder.sha256 (make grade refuses a zip that no longer matches),
# and a copy of each student version in STUDENT_DIR (labs/<lab>.ipynb, the notebook students open; committed).
# STUDENT_DIR= (empty) leaves labs/ alone.
ASSIGNMENTS = build/assignments
STUDENT_DIR ?= labs
assignments: $(VENV)/.test-installed ## make the graded labs' student versions and autograder zips (otter assign)
	$(VENV)/bin/python -m tools.assignments --out $(ASSIGNMENTS) $(if $(STUDENT_DIR),--student-dir "$(STUDENT_DIR)")

# `make notebooks` then `make assignments`, each for only what changed (tools/sync.py): a notebook whose twin,
# course_lib modules, tools or data changed since it was last executed (a hash of them in build/sync/), then a lab
# whose master, course_lib, tools or lock changed since its last build (the hash in build/assignments/<lab>/). When
# nothing changed it says so, in about a second.
sync: $(VENV)/.test-installed ## after an edit: re-execute the notebooks, then rebuild the labs, that it changed (nothing if nothing did)
	PYTHONHASHSEED=0 $(VENV)/bin/python -m tools.sync --out $(ASSIGNMENTS) $(if $(STUDENT_DIR),--student-dir "$(STUDENT_DIR)")

# make grade SUBMISSIONS=dir: dir/<student>/<lab>.ipynb, each graded by `otter run` (no Docker) in a bubblewrap
# sandbox (Debian: apt-get install bubblewrap). Writes grades.csv next to dir (or GRADES=path), feedback/<student>/
# <lab>.txt and grading-report.txt next to it; TIMEOUT is per notebook. UNSAFE=1 grades without the sandbox: the
# notebooks then run with your rights (read the README first).
SUBMISSIONS ?=
GRADES ?=
TIMEOUT ?= 300
UNSAFE ?=
grade: $(VENV)/.test-installed ## grade SUBMISSIONS=dir of <student>/<lab>.ipynb into grades.csv and feedback (sandboxed)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=dir [GRADES=grades.csv] [TIMEOUT=300] [UNSAFE=1]" >&2; exit 2; }
	$(VENV)/bin/python -m tools.grade "$(SUBMISSIONS)" --assignments $(ASSIGNMENTS) --timeout $(TIMEOUT)$(if $(GRADES), --grades "$(GRADES)")$(if $(filter 1,$(UNSAFE)), --unsafe)

# The course as a static website (tools/site.py; Sphinx with MyST-NB and sphinx-book-theme, configured in site/):
# every lesson, lab (student version) and the instructors' section, from the notebooks' stored outputs, nothing
# executed and nothing fetched. A notebook without outputs, a broken link or a missing image stops it, naming the
# file and the link. Publish by copying build/site/ to any static host; `make serve-site` previews it locally.
SITE = build/site
SITE_PORT ?= 8000
# REPO=owner/name: the course's GitHub repository, for each page's Binder link; without it, the git remote origin's if it
# is a GitHub URL; with neither, the pages have no Binder link (never a placeholder).
REPO ?=
site: $(VENV)/.site-installed ## build the course's website into build/site (REPO=owner/name for Binder links; offline)
	$(VENV)/bin/python -m tools.site --out $(SITE)$(if $(REPO), --repo "$(REPO)")

serve-site: site ## build the website, then serve it at http://127.0.0.1:8000 (SITE_PORT=...; Ctrl-C stops it)
	$(VENV)/bin/python -m http.server $(SITE_PORT) --bind 127.0.0.1 --directory $(SITE)

# One universal resolution (uv pip compile --universal) for every Python from 3.10 up and every platform: a pin
# that differs between them carries a marker. uv keeps each version already in requirements.lock that still
# satisfies pyproject.toml, so `make lock` after adding a dependency pins only the new packages and a rerun changes
# nothing; UPGRADE=1 re-resolves every pin to the newest allowed versions.
UPGRADE ?=
# Then environment.yml and binder/environment.yml are written from the lock (tools/environments.py).
lock: $(VENV)/.test-installed ## pin [lab,test,site] for Python 3.10+ into requirements.lock and both conda environments (uv; UPGRADE=1 for newest)
	$(UV) pip compile pyproject.toml --extra lab --extra test --extra site --universal --python-version 3.10 \
		--custom-compile-command "make lock" --quiet $(if $(UPGRADE),--upgrade) -o requirements.lock
	$(VENV)/bin/python -m tools.environments

clean: ## delete .venv, caches and build artefacts
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
	find . -path ./.git -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -prune -exec rm -rf {} +

# --- the virtual environment ------------------------------------------------------------------
# The stamps are newer than pyproject.toml and requirements.lock after an install, so a second
# run re-uses .venv; editing either file (e.g. `make lock`) triggers a reinstall.
# course_lib is installed editable: changes to its code need no reinstall.

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
		{ echo "error: $(PYTHON) is older than Python 3.10; run: make $(MAKECMDGOALS) PYTHON=python3.X" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

# uv, installed by the venv's pip (the one package not in requirements.lock: it installs the others).
$(UV_STAMP): | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	touch $@

# -c: requirements.lock is a constraints file. It fixes the version of whatever the extras pull
# in and installs nothing else (pip, which venv bundled, stays as it is).
$(VENV)/.lab-installed: pyproject.toml requirements.lock | $(UV_STAMP)
	$(UV_INSTALL) -e ".[lab]"
	touch $@

# [site]: the website's packages (`make site`). course_lib comes along (its runtime packages), not JupyterLab.
$(VENV)/.site-installed: pyproject.toml requirements.lock | $(UV_STAMP)
	$(UV_INSTALL) -e ".[site]"
	touch $@

# [lab,test,site] includes everything [lab] and [site] install, so this also satisfies their stamps (the browser
# tests build the website).
$(VENV)/.test-installed: pyproject.toml requirements.lock | $(UV_STAMP)
	$(UV_INSTALL) -e ".[lab,test,site]"
	touch $@ $(VENV)/.lab-installed $(VENV)/.site-installed

$(LAB_OVERRIDES): binder/overrides.json | $(VENV)/bin/python
	mkdir -p $(@D)
	cp binder/overrides.json $@
