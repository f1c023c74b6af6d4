"""`make site`: the course as a static website, built from the committed notebooks and their stored outputs.

Usage:

    python -m tools.site [--out build/site] [--repo owner/name]

Nothing is executed and nothing is fetched. The pages come from the files: the lessons (``notebooks/NN_*.ipynb``,
sorted; the first, the course map, is the home page), the labs as students get them (``labs/NN_*.ipynb``, sorted,
each with the static picture of its widget), the glossary (``notebooks/glossary.ipynb``) if there is one, and the
README's section for instructors. The sidebar groups them by track (each notebook's metadata ``course.track``): the
core path first, then the depth tracks' lessons and labs, then the reference pages; each lesson is titled "NN · ..."
and each lab "Lab N · ..." as its file is numbered. Each is staged (``build/site-src``) as Sphinx should read it: a
live widget becomes its stored picture (a self-check question becomes text with its answer folded away), the import
and setup cells are folded, every figure gets an alt text and every page a link that opens it in JupyterLab and,
when the course's GitHub repository is known (``--repo owner/name``, ``make site REPO=owner/name``; else the git
remote ``origin`` when it is a GitHub URL), on Binder: with none known, a page has no Binder link at all. Then Sphinx
(MyST-NB, sphinx-book-theme, ``site/conf.py``) writes the HTML, MathJax is served from the site, the theme's template
files are left out (``TEMPLATE_FILES``) and ``index.html`` opens the course map.

The build fails (``SiteError``, naming the file and the link) on a notebook whose code cells have no stored output,
a notebook without ``course.track``, a lesson or lab whose title is not numbered as its file, a link to a notebook or
a heading that is not on the site, a missing image, a live widget without a picture, a Sphinx warning, a page over
``MAX_PAGE_BYTES`` with its images, or an output file still holding template code (``{{`` or ``{%``).

>>> jupyter_anchor("What you'll learn")
"What-you'll-learn"
"""

from __future__ import annotations

import argparse
import ast
import html
import io
import json
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "site"
DEFAULT_OUT = ROOT / "build" / "site"
LESSON_GLOB = "notebooks/[0-9][0-9]_*.ipynb"
LAB_GLOB = "labs/[0-9][0-9]_*.ipynb"
GLOSSARY = "notebooks/glossary.ipynb"
INSTRUCTORS_HEADING = "## For instructors"
INSTRUCTORS_DOC = "instructors"
# The budget for one page, its HTML and its images together.
MAX_PAGE_BYTES = 3_000_000
# `make lab` serves the repository's root on JupyterLab's default port.
JUPYTERLAB_URL = "http://127.0.0.1:8888/lab/tree/"
# mybinder.org's launch URL for a GitHub repository's default branch, opening one file in JupyterLab
# (https://mybinder.readthedocs.io/en/latest/howto/user_interface.html: "?urlpath=lab/tree/<path>").
BINDER_URL = "https://mybinder.org/v2/gh/{repository}/HEAD?urlpath=lab/tree/{source}"
# GitHub's owner and repository names: the owner letters, digits and single hyphens (at most 39 characters), the
# repository letters, digits, '-', '_' and '.'.
GITHUB_REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}/[A-Za-z0-9._-]{1,100}$")
GITHUB_REMOTE = re.compile(
    r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)([^/]+/[^/]+?)(?:\.git)?/?$"
)
PLACEHOLDERS = {"owner/repo", "owner/name", "user/repo"}
# Sphinx writes every page outside _static/; an HTML file inside it is a theme's Jinja template that Sphinx copied
# unrendered with the theme's static files (sphinx-book-theme's sbt-webpack-macros.html, pydata-sphinx-theme's
# webpack-macros.html, with raw `{{ pathto(...) }}`): left out of the site.
TEMPLATE_FILES = "_static/**/*.html"
TEMPLATE_CODE = re.compile(r"\{\{|\{%")
# The files a reader's browser shows as text or styles (scripts and source maps are code, where braces are syntax).
TEXT_SUFFIXES = (".html", ".css", ".txt")
# Titles numbered as their files: a lesson NN_x "# NN · ...", a lab NN_x "# Lab N · ...".
LESSON_TITLE = "{number:02d} · "
LAB_TITLE = "Lab {number} · "
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# MathJax 3's browser build, from the django-static-mathjax wheel: the TeX-to-HTML bundle and what it loads lazily
# (TeX extensions, its menu, accessibility, fonts).
MATHJAX_FILES = ("tex-chtml.js", "input/tex/extensions", "output/chtml", "ui", "a11y", "sre", "adaptors")
LINK = re.compile(r"(!?)\[((?:[^\]\\]|\\.)*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
# An HTML anchor in markdown (`<a id="gemm"></a>`: the glossary's entries), a link target like a heading's.
HTML_ANCHOR = re.compile(r'<a\s+id="([A-Za-z0-9_-]+)"')
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


class SiteError(Exception):
    """The site cannot be built as it should read: the message names the file and what is wrong in it."""


@dataclass(frozen=True)
class Page:
    """One page of the site: its source (relative to the repository) and the caption of its sidebar group."""

    source: str
    caption: str

    @property
    def docname(self) -> str:
        """Sphinx's name of the page: its path without the suffix (``notebooks/01_mac``)."""
        return self.source.rsplit(".", 1)[0] if self.source.endswith(".ipynb") else INSTRUCTORS_DOC


def jupyter_anchor(heading: str) -> str:
    """The anchor JupyterLab gives a heading (its text, spaces made hyphens): myst_heading_slug_func of the site.

    >>> jupyter_anchor("The science")
    'The-science'
    """
    return heading.strip().replace(" ", "-")


def track(root: Path, source: str) -> str:
    """A notebook's ``course.track`` ("core" or "depth"); ``SiteError`` naming the notebook when it has none."""
    value = read_notebook(root, source).get("metadata", {}).get("course", {}).get("track")
    if value not in ("core", "depth"):
        raise SiteError(f"{source}: its metadata course.track is {value!r}, not 'core' or 'depth' (its twin's header)")
    return value


def caption(track_name: str, kind: str) -> str:
    """The sidebar group of a lesson or lab on a track: the core path's lessons and labs together.

    >>> caption("core", "Labs"), caption("depth", "Labs")
    ('Core path', 'Depth: labs')
    """
    return "Core path" if track_name == "core" else f"Depth: {kind.lower()}"


def pages(root: Path = ROOT) -> list[Page]:
    """The site's pages in sidebar order, found from the files (never a list): the core path's lessons then labs, the
    depth tracks' lessons then labs, then the glossary and the instructors' page.

    >>> [(page.source, page.caption) for page in pages()][:2]
    [('notebooks/00_course_map.ipynb', 'Core path'), ('notebooks/01_mac.ipynb', 'Core path')]
    """
    lessons = [path.relative_to(root).as_posix() for path in sorted(root.glob(LESSON_GLOB))]
    if not lessons:
        raise SiteError(f"no lesson matches {LESSON_GLOB} in {root}: nothing to build")
    labs = [path.relative_to(root).as_posix() for path in sorted(root.glob(LAB_GLOB))]
    found = [
        Page(source, caption(wanted, kind))
        for wanted in ("core", "depth")
        for kind, sources in (("Lessons", lessons), ("Labs", labs))
        for source in sources
        if track(root, source) == wanted
    ]
    if found[0].source != lessons[0]:
        raise SiteError(f"{lessons[0]}: the home page (the first lesson) must be on the core path")
    if (root / GLOSSARY).exists():
        found.append(Page(GLOSSARY, "Reference"))
    found.append(Page("README.md", "Reference"))
    return found


def check_title(source: str, title: str) -> None:
    """A lesson's or a lab's title carries its file's number, as the sidebar lists them ("02 · ...", "Lab 2 · ...").

    >>> check_title("labs/02_global_batch.ipynb", "Lab 2 · Count the examples in a step")
    >>> check_title("notebooks/01_mac.ipynb", "Count the work")
    Traceback (most recent call last):
    ...
    tools.site.SiteError: notebooks/01_mac.ipynb: its title 'Count the work' must start with '01 · ', ...
    """
    name = source.rsplit("/", 1)[-1]
    if not re.match(r"\d\d_", name):
        return
    number = int(name[:2])
    expected = (LAB_TITLE if source.startswith("labs/") else LESSON_TITLE).format(number=number)
    if not title.startswith(expected):
        raise SiteError(f"{source}: its title {title!r} must start with {expected!r}, as its file is numbered")


# ---- reading the notebooks -------------------------------------------------------------------------------------------


def read_notebook(root: Path, source: str) -> dict:
    try:
        return json.loads((root / source).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SiteError(f"{source}: not a readable notebook ({error})") from error


def markdown_text(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def headings(markdown: str) -> list[str]:
    """The headings of a markdown text, as their text (code blocks left out)."""
    return [match.group(2) for match in HEADING.finditer(FENCE.sub("", markdown))]


def heading_anchors(notebook: dict) -> set[str]:
    """Every anchor JupyterLab gives the notebook's headings, with and without their inline markup, and every HTML
    anchor of its markdown (``<a id="...">``: site/conf.py makes them link targets on the site too)."""
    anchors = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            anchors.update(HTML_ANCHOR.findall(FENCE.sub("", markdown_text(cell))))
            for text in headings(markdown_text(cell)):
                anchors.add(jupyter_anchor(text))
                anchors.add(jupyter_anchor(re.sub(r"[*_`]", "", text)))
    return anchors


def check_stored_outputs(source: str, notebook: dict) -> None:
    """A notebook with code cells must have stored outputs: one never run would publish a page without results."""
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code" and markdown_text(cell).strip()]
    if code and not any(cell.get("outputs") for cell in code):
        raise SiteError(
            f"{source}: none of its {len(code)} code cells has a stored output; run it and save it "
            f"(`make notebooks NOTEBOOKS={source}`, or `make assignments` for a lab) before `make site`"
        )


def check_links(source: str, markdown: str, anchors_by_page: dict[str, set[str]], root: Path) -> None:
    """Every relative link of a page's markdown must land on a page of the site (and its heading), every image on a
    file. Links with a scheme (https:, mailto:) are left alone."""
    for match in LINK.finditer(FENCE.sub("", markdown)):
        is_image, target = match.group(1) == "!", match.group(3)
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue
        path, anchor = unquote(parts.path), unquote(parts.fragment)
        resolved = (root / source).parent / path if path else root / source
        relative = Path(resolved.resolve()).relative_to(root.resolve()).as_posix() if path else source
        link = f"{match.group(1)}[{match.group(2)}]({target})"
        if is_image:
            if not resolved.is_file():
                raise SiteError(f"{source}: image {link}: {relative} does not exist")
            continue
        if relative not in anchors_by_page:
            raise SiteError(f"{source}: broken link {link}: {relative} is not a page of the site")
        if anchor and anchor not in anchors_by_page[relative]:
            raise SiteError(f"{source}: broken link {link}: {relative} has no heading with the anchor #{anchor}")


# ---- staging: each notebook as the site shows it ---------------------------------------------------------------------


def quiz_html(code: str) -> str | None:
    """A self-check question (``quiz.MultipleChoice(quiz.Question(...))`` with literal arguments) as HTML: the
    prompt, the options and the answer folded away; None when the cell holds no such question."""
    from course_lib.widgets.quiz import Question

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return None
    calls = [node for node in ast.walk(tree.body[-1]) if isinstance(node, ast.Call)]
    questions = [call for call in calls if ast.unparse(call.func).split(".")[-1] == "Question"]
    if len(questions) != 1:
        return None
    try:
        args = [ast.literal_eval(arg) for arg in questions[0].args]
        kwargs = {keyword.arg: ast.literal_eval(keyword.value) for keyword in questions[0].keywords if keyword.arg}
    except ValueError:
        return None
    question = Question(*args, **kwargs)
    letters = "ABCDEFGHIJ"
    options = "".join(f"<li>{html.escape(option)}</li>" for option in question.options)
    answer = f"{letters[question.answer]}. {html.escape(question.options[question.answer])}"
    return (
        f'<div class="course-quiz"><p><strong>Self-check.</strong> {html.escape(question.prompt)}</p>'
        f'<ol type="A">{options}</ol><details><summary>Answer</summary><p><strong>{answer}</strong>. '
        f"{html.escape(question.explanation)}</p></details></div>"
    )


def static_outputs(source: str, index: int, cell: dict) -> list[dict]:
    """The cell's outputs without live widgets: a widget's stored picture stays, a question becomes HTML."""
    outputs = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if WIDGET_VIEW not in data:
            outputs.append(output)
            continue
        data = {mime: value for mime, value in data.items() if mime != WIDGET_VIEW}
        if "image/png" in data:
            outputs.append({**output, "data": data})
            continue
        quiz = quiz_html(markdown_text(cell))
        if quiz is None:
            raise SiteError(f"{source}: cell {index} shows a live widget with no stored picture (image/png)")
        outputs.append({"output_type": "display_data", "metadata": {}, "data": {"text/html": quiz}})
    return outputs


def is_plumbing(code: str) -> bool:
    """Imports, setup calls and the grader's start: cells a reader can skip (their source is folded on the site)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    if not tree.body:
        return False
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            continue
        call = statement.value if isinstance(statement, ast.Expr | ast.Assign) else None
        if isinstance(call, ast.Call) and not call.args and not call.keywords and isinstance(statement, ast.Expr):
            continue  # a setup call without arguments, e.g. readable_feedback()
        if isinstance(call, ast.Call) and ast.unparse(call.func) == "otter.Notebook":
            continue
        return False
    return True


def first_sentence(markdown: str, limit: int = 240) -> str:
    """The first sentence of a markdown text as plain words (headings, display maths and markup left out)."""
    text = re.sub(r"\$\$.*?\$\$|\$([^$]*)\$", lambda m: m.group(1) or "", markdown, flags=re.DOTALL)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"^#+\s.*$|[*_`>|]", "", text, flags=re.MULTILINE)
    text = " ".join(text.split())
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def alt_text(title: str, section: str, before: str) -> str:
    """A figure's alt text: where it is and what the prose before it says it shows."""
    said = first_sentence(before) if before else ""
    where = f"Figure of {title}, section {section}" if section and section != title else f"Figure of {title}"
    return f"{where}: {said}" if said else where


def open_links(source: str, repository: str | None) -> str:
    """The line under a page's title that opens its notebook in JupyterLab and, if the repository is known, on Binder.

    >>> open_links("notebooks/01_mac.ipynb", None).count("Binder")
    0
    >>> links = open_links("notebooks/01_mac.ipynb", "me/course")
    >>> "https://mybinder.org/v2/gh/me/course/HEAD?urlpath=lab/tree/notebooks/01_mac.ipynb" in links
    True
    """
    jupyterlab = f'<a href="{JUPYTERLAB_URL}{source}">JupyterLab</a> (after <code>make lab</code>)'
    if repository is None:
        return f'<p class="course-open">Open this notebook in {jupyterlab}.</p>'
    binder = BINDER_URL.format(repository=repository, source=source)
    binder_link = f'<a href="{binder}">Binder</a> (nothing to install)'
    return f'<p class="course-open">Open this notebook in {jupyterlab} or on {binder_link}.</p>'


def with_open_links(markdown: str, links: str) -> str:
    """The page's title cell with the open links under the title."""
    title, _, rest = markdown.partition("\n")
    return f"{title}\n\n{links}\n\n{rest.lstrip(chr(10))}"


def stage_notebook(source: str, notebook: dict, repository: str | None) -> dict:
    """The notebook as the site shows it (the repository's file is not changed)."""
    cells, title, section, before, titled = [], source, "", "", False
    for index, cell in enumerate(notebook["cells"]):
        cell = json.loads(json.dumps(cell))
        text = markdown_text(cell)
        if cell["cell_type"] == "markdown":
            found = headings(text)
            if found and not titled and text.startswith("# "):
                title, titled = found[0], True
                check_title(source, title)
                cell["source"] = with_open_links(text, open_links(source, repository))
            section = found[-1] if found else section
            before = text
        elif cell["cell_type"] == "code":
            cell["source"] = "\n".join(line for line in text.splitlines() if not line.startswith("# nbval-"))
            cell["outputs"] = static_outputs(source, index, cell)
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if quiz_html(text) is not None:
                tags.append("remove-input")  # the question's text says all its code does
            elif is_plumbing(text):
                tags.append("hide-input")
            if any("image/png" in output.get("data", {}) for output in cell["outputs"]):
                alt = alt_text(title, section, before)
                cell["metadata"]["mystnb"] = {"image": {"alt": alt}}
        cells.append(cell)
    if not titled:
        raise SiteError(f"{source}: no title (a first markdown cell starting with '# ')")
    return {**notebook, "metadata": {k: v for k, v in notebook["metadata"].items() if k != "widgets"}, "cells": cells}


def toctree(site_pages: list[Page]) -> str:
    """The hidden toctrees that make the sidebar, one per caption, in chain order (the home page is the root)."""
    blocks, captions = [], list(dict.fromkeys(page.caption for page in site_pages))
    for caption in captions:
        entries = "\n".join(f"/{page.docname}" for page in site_pages[1:] if page.caption == caption)
        if entries:
            blocks.append(f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n{entries}\n```")
    return "\n\n".join(blocks)


def instructors_page(root: Path) -> str:
    """The README's section for instructors, as a page (its heading made the title)."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    start = readme.find("\n" + INSTRUCTORS_HEADING)
    if start < 0:
        raise SiteError(f"README.md: no section starting with {INSTRUCTORS_HEADING!r} (the instructors' page)")
    section = readme[start + 1 :]
    end = re.search(r"^## ", section[3:], re.MULTILINE)
    section = section[: end.start() + 3] if end else section
    return section.replace("## ", "# ", 1)


def repository(root: Path = ROOT, configured: str | None = None) -> str | None:
    """The course's GitHub repository (owner/name), whose Binder link each page gets: ``configured`` (``make site
    REPO=owner/name``) if given, else the git remote ``origin``'s when it is a GitHub URL, else None (no Binder link).

    >>> repository(configured="me/parallelism-course")
    'me/parallelism-course'
    >>> repository(configured="OWNER/REPO")
    Traceback (most recent call last):
    ...
    tools.site.SiteError: REPO='OWNER/REPO' is a placeholder: give the course's GitHub repository as owner/name, ...
    """
    if configured is not None:
        if configured.lower() in PLACEHOLDERS:
            raise SiteError(
                f"REPO={configured!r} is a placeholder: give the course's GitHub repository as owner/name, or no REPO "
                "for no Binder link"
            )
        if not GITHUB_REPOSITORY.match(configured):
            raise SiteError(
                f"REPO={configured!r} is not a GitHub repository: give it as owner/name (the owner letters, digits "
                "and hyphens, at most 39; the name letters, digits, '-', '_' and '.')"
            )
        return configured
    try:
        remote = subprocess.run(
            ["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:  # no git on the machine: no remote to read
        return None
    found = GITHUB_REMOTE.match(remote)
    if found is None or not GITHUB_REPOSITORY.match(found.group(1)) or found.group(1).lower() in PLACEHOLDERS:
        return None
    return found.group(1)


def stage(site_pages: list[Page], stage_dir: Path, root: Path = ROOT, repo: str | None = None) -> None:
    """Write the pages as Sphinx reads them into ``stage_dir`` (emptied first), after checking every link."""
    notebooks = {page.source: read_notebook(root, page.source) for page in site_pages if page.source.endswith(".ipynb")}
    anchors = {source: heading_anchors(notebook) for source, notebook in notebooks.items()}
    instructors = instructors_page(root)
    anchors["README.md"] = {jupyter_anchor(text) for text in headings(instructors)}
    for source, notebook in notebooks.items():
        check_stored_outputs(source, notebook)
        for cell in notebook["cells"]:
            if cell["cell_type"] == "markdown":
                check_links(source, markdown_text(cell), anchors, root)
    check_links("README.md", instructors, anchors, root)
    shutil.rmtree(stage_dir, ignore_errors=True)
    home = site_pages[0].source
    for source, notebook in notebooks.items():
        staged = stage_notebook(source, notebook, repo)
        if source == home:
            staged["cells"].append(
                {"cell_type": "markdown", "id": "site-toctree", "metadata": {}, "source": toctree(site_pages)}
            )
        (stage_dir / source).parent.mkdir(parents=True, exist_ok=True)
        (stage_dir / source).write_text(json.dumps(staged, ensure_ascii=False), encoding="utf-8")
    (stage_dir / f"{INSTRUCTORS_DOC}.md").write_text(instructors, encoding="utf-8")
    stage_mathjax(stage_dir / "_static" / "mathjax")


def stage_mathjax(target: Path) -> None:
    """MathJax's files, from the installed django-static-mathjax wheel (nothing is downloaded)."""
    import importlib.util

    spec = importlib.util.find_spec("mathjax")
    locations = list(spec.submodule_search_locations or []) if spec else []
    es5 = next((Path(p) / "static" / "mathjax" / "es5" for p in locations if (Path(p) / "static").is_dir()), None)
    if es5 is None:
        raise SiteError("MathJax's files are missing: install the site's packages (`make site` does: .[site])")
    for name in MATHJAX_FILES:
        origin, destination = es5 / name, target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, destination)
        else:
            shutil.copy2(origin, destination)


# ---- building and checking the HTML ----------------------------------------------------------------------------------


def run_sphinx(stage_dir: Path, out: Path, home: str) -> None:
    """Sphinx's HTML build of the staged pages; any warning fails it, named by the repository's file."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    reports = io.StringIO()
    # As sphinx-build does: docutils' registries restored after the build, so that a second build in the same process
    # (the tests) does not warn that Sphinx's nodes are registered already.
    with patch_docutils(CONFIG_DIR), docutils_namespace(), warnings.catch_warnings():
        # The theme's and MyST's own use of APIs that Sphinx will remove: theirs to fix, not a reader's problem.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        app = Sphinx(
            srcdir=str(stage_dir),
            confdir=str(CONFIG_DIR),
            outdir=str(out),
            doctreedir=str(stage_dir / ".doctrees"),
            buildername="html",
            confoverrides={
                "root_doc": home,
                "html_static_path": [str(CONFIG_DIR / "_static"), str(stage_dir / "_static")],
            },
            status=None,
            warning=reports,
            freshenv=True,
            keep_going=True,
        )
        app.build(force_all=True)
    reported = ANSI_COLOUR.sub("", reports.getvalue()).replace(f"{stage_dir}/", "")
    reported = reported.replace(f"{INSTRUCTORS_DOC}.md", "README.md (its section for instructors)")
    if reported.strip():
        raise SiteError(f"Sphinx reported problems (the site is not published with them):\n{reported.strip()}")


def page_bytes(out: Path) -> dict[str, int]:
    """Each HTML page's size with the images it shows (bytes), by its path in the site (_static/ holds the theme's
    templates, not pages)."""
    sizes = {}
    for page in sorted(out.rglob("*.html")):
        if page.relative_to(out).parts[0] == "_static":
            continue
        text = page.read_text(encoding="utf-8")
        images = {unquote(src) for src in re.findall(r'<img[^>]*\ssrc="([^"]+)"', text) if "://" not in src}
        total = page.stat().st_size
        for src in images:
            image = (page.parent / src).resolve()
            total += image.stat().st_size if image.is_file() else 0
        sizes[page.relative_to(out).as_posix()] = total
    return sizes


def write_index(out: Path, home: str) -> None:
    """``index.html`` opens the home page (the course map), for any static host."""
    target = f"{home}.html"
    (out / "index.html").write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Course map</title>'
        f'<meta http-equiv="refresh" content="0; url={target}"></head>'
        f'<body><p><a href="{target}">The course map</a></p></body></html>\n',
        encoding="utf-8",
    )


def remove_templates(out: Path) -> list[str]:
    """Delete the theme's template files (``TEMPLATE_FILES``) from the built site; return what was deleted."""
    removed = sorted(path.relative_to(out).as_posix() for path in out.glob(TEMPLATE_FILES))
    for relative in removed:
        (out / relative).unlink()
    return removed


def check_no_template_code(out: Path) -> None:
    """No page, stylesheet or text file of the site holds template code (``{{`` or ``{%``): a template shipped
    unrendered, or a page whose Jinja was not run. Scripts and code listings (``<script>``, ``<pre>``, ``<code>``)
    are left out: there braces are the code's own."""
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out).as_posix()
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        text = re.sub(
            r"<script\b.*?</script>|<pre\b.*?</pre>|<code\b.*?</code>",
            "",
            path.read_text(encoding="utf-8"),
            flags=re.DOTALL,
        )
        found = TEMPLATE_CODE.search(text)
        if found:
            context = " ".join(text[max(found.start() - 40, 0) : found.end() + 40].split())
            raise SiteError(f"{relative}: holds template code ({found.group(0)!r}: ...{context}...) in the built site")


def build(
    out: Path = DEFAULT_OUT, root: Path = ROOT, stage_dir: Path | None = None, repo: str | None = None
) -> dict[str, int]:
    """Build the site into ``out`` (emptied first) and return each page's size with its images; ``repo``
    (owner/name) gives the Binder links, else the git remote ``origin`` if it is on GitHub, else none."""
    site_pages = pages(root)
    stage_dir = stage_dir or out.parent / f"{out.name}-src"
    stage(site_pages, stage_dir, root, repository(root, repo))
    shutil.rmtree(out, ignore_errors=True)
    run_sphinx(stage_dir, out, site_pages[0].docname)
    remove_templates(out)
    check_no_template_code(out)
    write_index(out, site_pages[0].docname)
    sizes = page_bytes(out)
    too_big = {page: size for page, size in sizes.items() if size > MAX_PAGE_BYTES}
    if too_big:
        raise SiteError(f"pages over {MAX_PAGE_BYTES / 1e6:.0f} MB with their images: {too_big}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder (default: build/site)")
    parser.add_argument(
        "--repo",
        default=None,
        help="the course's GitHub repository, owner/name, for the Binder links (default: the git remote origin's if it "
        "is on GitHub; none: no Binder links)",
    )
    args = parser.parse_args(argv)
    try:
        sizes = build(args.out.resolve(), repo=args.repo or None)
    except SiteError as error:
        print(f"make site: {error}", file=sys.stderr)
        return 1
    largest = max(sizes, key=sizes.__getitem__)
    print(f"make site: {len(sizes)} pages in {args.out}; the largest, {largest}, {sizes[largest] / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
