"""tools/site.py (`make site`): which pages, in which order, and how a notebook is staged for Sphinx; what stops the
build (a notebook without outputs, a broken link or heading, a missing image), naming the file and the link.

These run on a small course made in a temporary folder (no Sphinx, except the one slow test); the browser tier
(tests/browser/test_site_in_browser.py) builds the real site and reads it in Chromium.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tools import site

ROOT = Path(__file__).resolve().parents[1]
README = """# A course

## For instructors: graded labs

Grade with `make grade`.

## For maintainers

Not on the site.
"""
QUIZ = """# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Which is <right>?",
        options=("this one", "that one"),
        answer=1,
        explanation="Because " "it is.",
    )
)"""
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "id": f"m{abs(hash(text)) % 10**8}", "metadata": {}, "source": text}


def code(text: str, outputs: list | None = None) -> dict:
    return {
        "cell_type": "code",
        "id": f"c{abs(hash(text)) % 10**8}",
        "metadata": {},
        "execution_count": None,
        "source": text,
        "outputs": outputs or [],
    }


def printed(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def picture(**extra_data) -> dict:
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": PNG, "text/plain": "<Figure>"} | extra_data,
    }


def write_notebook(path: Path, cells: list[dict], track: str | None = "core") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "language_info": {"name": "python"}}
    if track is not None:
        metadata["course"] = {"track": track}
    notebook = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook), encoding="utf-8")


@pytest.fixture
def course(tmp_path) -> Path:
    """A course of two lessons and a lab, every link good: each test breaks one thing."""
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    write_notebook(
        tmp_path / "notebooks" / "00_map.ipynb",
        [
            markdown("# 00 · The map\n\nRead [01](01_next.ipynb#The-science) and [the lab](../labs/01_lab.ipynb)."),
            code("import math\n\nfrom course_lib import units"),
            markdown("## Notation\n\nThe figure below draws $T$ against $Q$: one line a link."),
            code("plot()", [picture()]),
        ],
    )
    write_notebook(
        tmp_path / "notebooks" / "01_next.ipynb",
        [
            markdown("# 01 · Next\n\n## The science\n\nSee [the map](00_map.ipynb#Notation)."),
            code("print(1)", [printed("1\n")]),
            code(QUIZ, [{"output_type": "execute_result", "execution_count": 2, "metadata": {},
                         "data": {site.WIDGET_VIEW: {"model_id": "x"}, "text/plain": "MultipleChoice(...)"}}]),
        ],
    )  # fmt: skip
    write_notebook(
        tmp_path / "labs" / "01_lab.ipynb",
        [
            code('import otter\ngrader = otter.Notebook("01_lab.ipynb")'),
            markdown("# Lab 1 · A lab\n\nAfter [lesson 01](../notebooks/01_next.ipynb)."),
            code("lab = a_lab()\nlab", [picture()]),
            code("answer = ..."),
        ],
    )
    return tmp_path


def staged(stage_dir: Path, source: str) -> dict:
    return json.loads((stage_dir / source).read_text(encoding="utf-8"))


def test_pages_come_from_the_files_the_core_path_first(course):
    write_notebook(course / "notebooks" / "05_later.ipynb", [markdown("# 05 · Later")], track="depth")
    write_notebook(course / "notebooks" / "glossary.ipynb", [markdown("# Glossary")], track="depth")
    write_notebook(course / "labs" / "00_first_lab.ipynb", [markdown("# Lab 0")], track="depth")
    write_notebook(course / "labs" / "01_lab" / "01_lab.ipynb", [markdown("# The master, not a page")])
    found = [(page.source, page.caption) for page in site.pages(course)]
    assert found == [
        ("notebooks/00_map.ipynb", "Core path"),
        ("notebooks/01_next.ipynb", "Core path"),
        ("labs/01_lab.ipynb", "Core path"),
        ("notebooks/05_later.ipynb", "Depth: lessons"),
        ("labs/00_first_lab.ipynb", "Depth: labs"),
        ("notebooks/glossary.ipynb", "Reference"),
        ("README.md", "Reference"),
    ]
    assert [page.docname for page in site.pages(course)][-1] == "instructors"


def test_a_notebook_without_a_track_stops_the_build(course):
    write_notebook(course / "labs" / "02_untracked.ipynb", [markdown("# Lab 2 · Untracked")], track=None)
    with pytest.raises(site.SiteError, match=r"labs/02_untracked.ipynb: its metadata course.track is None"):
        site.pages(course)
    write_notebook(course / "notebooks" / "00_map.ipynb", [markdown("# 00 · The map")], track="depth")
    write_notebook(course / "labs" / "02_untracked.ipynb", [markdown("# Lab 2 · Untracked")], track="depth")
    with pytest.raises(site.SiteError, match=r"notebooks/00_map.ipynb: the home page .* must be on the core path"):
        site.pages(course)


@pytest.mark.parametrize(
    ("source", "title", "fine"),
    [
        ("notebooks/01_mac.ipynb", "01 · Count the work", True),
        ("notebooks/01_mac.ipynb", "Count the work", False),  # lessons 01-02 were unnumbered (issue 41)
        ("notebooks/02_nccl.ipynb", "03 · Move the data", False),
        ("labs/02_global_batch.ipynb", "Lab 2 · Count the examples", True),
        ("labs/02_global_batch.ipynb", "Lab 02 · Count the examples", False),
        ("labs/02_global_batch.ipynb", "02 · Count the examples", False),
        ("notebooks/glossary.ipynb", "Glossary", True),
    ],
)
def test_lessons_and_labs_are_titled_with_their_files_number(source, title, fine):
    if fine:
        site.check_title(source, title)
    else:
        with pytest.raises(site.SiteError, match=f"^{re.escape(source)}: its title"):
            site.check_title(source, title)


def test_every_lesson_and_lab_of_the_course_is_titled_with_its_number():
    for page in site.pages():
        if page.source.endswith(".ipynb"):
            notebook = site.read_notebook(site.ROOT, page.source)
            titles = [
                text
                for cell in notebook["cells"]
                if cell["cell_type"] == "markdown" and site.markdown_text(cell).startswith("# ")
                for text in site.headings(site.markdown_text(cell))[:1]
            ]
            site.check_title(page.source, titles[0])


def test_no_lessons_is_an_error(tmp_path):
    with pytest.raises(site.SiteError, match="no lesson matches"):
        site.pages(tmp_path)


def test_staging_shows_each_notebook_as_the_site_reads_it(course, tmp_path):
    out = tmp_path / "stage"
    site.stage(site.pages(course), out, course)
    home = staged(out, "notebooks/00_map.ipynb")
    title = home["cells"][0]["source"]
    assert title.startswith('# 00 · The map\n\n<p class="course-open">')
    assert "http://127.0.0.1:8888/lab/tree/notebooks/00_map.ipynb" in title
    assert "Binder" not in title and "mybinder" not in title  # no repository given: no Binder link
    assert home["cells"][1]["metadata"]["tags"] == ["hide-input"]  # imports: folded
    assert home["cells"][3]["metadata"]["mystnb"]["image"]["alt"] == (
        "Figure of 00 · The map, section Notation: The figure below draws T against Q: one line a link."
    )
    # The sidebar: every other page under its caption, in chain order, from the home page.
    toctree = home["cells"][-1]["source"]
    assert toctree.index(":caption: Core path") < toctree.index("/notebooks/01_next") < toctree.index("/labs/01_lab")
    assert ":caption: Reference" in toctree and "/instructors" in toctree
    lab = staged(out, "labs/01_lab.ipynb")
    assert lab["cells"][0]["metadata"]["tags"] == ["hide-input"]  # the grader's start
    assert "tags" not in lab["cells"][2]["metadata"] or lab["cells"][2]["metadata"]["tags"] == []
    assert (out / "instructors.md").read_text().splitlines()[0] == "# For instructors: graded labs"
    assert "For maintainers" not in (out / "instructors.md").read_text()
    assert (out / "_static" / "mathjax" / "tex-chtml.js").is_file()


def test_a_self_check_becomes_text_with_its_answer_folded(course, tmp_path):
    out = tmp_path / "stage"
    site.stage(site.pages(course), out, course)
    cell = staged(out, "notebooks/01_next.ipynb")["cells"][2]
    assert "nbval" not in cell["source"]
    assert cell["metadata"]["tags"] == ["remove-input"]
    (output,) = cell["outputs"]
    assert set(output["data"]) == {"text/html"}
    quiz = output["data"]["text/html"]
    assert "Which is &lt;right&gt;?" in quiz
    assert "<li>this one</li><li>that one</li>" in quiz
    assert "<details><summary>Answer</summary><p><strong>B. that one</strong>. Because it is.</p></details>" in quiz


def test_a_widget_keeps_its_picture_and_loses_its_live_view():
    cell = code("lab", [picture(**{site.WIDGET_VIEW: {"model_id": "y"}})])
    (output,) = site.static_outputs("labs/01_lab.ipynb", 2, cell)
    assert set(output["data"]) == {"image/png", "text/plain"}


def test_a_live_widget_without_a_picture_is_an_error():
    cell = code("w = slider()\nw", [{"output_type": "display_data", "metadata": {}, "data": {site.WIDGET_VIEW: {}}}])
    with pytest.raises(
        site.SiteError, match=r"notebooks/02_x.ipynb: cell 4 shows a live widget with no stored picture"
    ):
        site.static_outputs("notebooks/02_x.ipynb", 4, cell)


@pytest.mark.parametrize(
    ("source", "plumbing"),
    [
        ("import math\nfrom course_lib import units", True),
        ("readable_feedback()", True),
        ('import otter\ngrader = otter.Notebook("x.ipynb")', True),
        ("import math\nprint(math.pi)", False),
        ("lab = ring_allreduce_lab(ranks=8)", False),
        ("", False),
        ("def broken(:", False),
    ],
)
def test_plumbing_cells(source, plumbing):
    assert site.is_plumbing(source) is plumbing


def test_a_question_with_computed_arguments_is_not_made_text():
    assert site.quiz_html('quiz.MultipleChoice(quiz.Question(prompt=f"{x} ms?", options=("a", "b"), answer=0))') is None
    assert site.quiz_html("print(1)") is None


def test_a_notebook_without_stored_outputs_stops_the_build(course, tmp_path):
    write_notebook(course / "notebooks" / "02_unrun.ipynb", [markdown("# 02 · Unrun"), code("x = 1"), code("x")])
    with pytest.raises(site.SiteError, match=r"notebooks/02_unrun.ipynb: none of its 2 code cells has a stored output"):
        site.stage(site.pages(course), tmp_path / "stage", course)


@pytest.mark.parametrize(
    ("link", "message"),
    [
        ("[gone](03_gone.ipynb)", r"broken link \[gone\]\(03_gone.ipynb\): notebooks/03_gone.ipynb is not a page"),
        (
            "[01](01_next.ipynb#The-sceince)",
            r"broken link \[01\]\(01_next.ipynb#The-sceince\): notebooks/01_next.ipynb has no heading with the anchor "
            r"#The-sceince",
        ),
        ("[here](#Nowhere)", r"broken link \[here\]\(#Nowhere\): notebooks/00_map.ipynb has no heading"),
        (
            "[master](../labs/01_lab/01_lab.ipynb)",
            r"broken link \[master\]\(../labs/01_lab/01_lab.ipynb\): labs/01_lab/01_lab.ipynb is not a page of the "
            r"site",
        ),
        ("![a plot](figures/missing.png)", r"image !\[a plot\]\(figures/missing.png\): notebooks/figures/missing.png"),
    ],
)
def test_a_broken_link_or_image_stops_the_build_naming_file_and_link(course, tmp_path, link, message):
    notebook = json.loads((course / "notebooks" / "00_map.ipynb").read_text())
    notebook["cells"].append(markdown(f"## More\n\nSee {link}."))
    (course / "notebooks" / "00_map.ipynb").write_text(json.dumps(notebook))
    with pytest.raises(site.SiteError, match=r"^notebooks/00_map.ipynb: " + message):
        site.stage(site.pages(course), tmp_path / "stage", course)


def test_links_in_code_blocks_and_to_the_web_are_left_alone(course, tmp_path):
    notebook = json.loads((course / "notebooks" / "00_map.ipynb").read_text())
    notebook["cells"].append(markdown("## Web\n\n[paper](https://arxiv.org/abs/1)\n\n```\n[x](nothing.ipynb)\n```"))
    (course / "notebooks" / "00_map.ipynb").write_text(json.dumps(notebook))
    site.stage(site.pages(course), tmp_path / "stage", course)


def test_a_readme_without_instructors_section_is_an_error(course, tmp_path):
    (course / "README.md").write_text(README.replace("## For instructors", "## Teachers"), encoding="utf-8")
    with pytest.raises(site.SiteError, match="README.md: no section starting with '## For instructors'"):
        site.stage(site.pages(course), tmp_path / "stage", course)


def test_an_html_anchor_is_a_link_target_like_a_heading():
    # the glossary's rows carry <a id="..."> anchors, which lessons link as glossary.ipynb#gemm
    notebook = {"cells": [markdown('## The science\n| <a id="gemm"></a>GEMM | a matrix multiply |')]}
    assert site.heading_anchors(notebook) == {"The-science", "gemm"}
    fenced = {"cells": [markdown('```\n<a id="not-an-anchor"></a>\n```')]}
    assert site.heading_anchors(fenced) == set()


def test_alt_text_and_anchors():
    assert site.jupyter_anchor("What you'll learn") == "What-you'll-learn"
    assert site.alt_text("01 · Count", "01 · Count", "") == "Figure of 01 · Count"
    long = "word " * 100
    assert site.alt_text("T", "S", long).endswith("…")
    assert len(site.alt_text("T", "S", long)) < 300


@pytest.mark.slow
def test_a_sphinx_warning_stops_the_build_naming_the_file(course, tmp_path):
    out = tmp_path / "site"
    sizes = site.build(out, course, tmp_path / "stage")
    assert set(sizes) >= {"notebooks/00_map.html", "notebooks/01_next.html", "labs/01_lab.html", "instructors.html"}
    assert "00_map.html" in (out / "index.html").read_text()
    # The theme's Jinja templates (sbt-webpack-macros.html) are not shipped, and no page holds template code.
    assert not list(out.rglob("*webpack-macros.html")) and not list(out.glob("_static/**/*.html"))
    pages = [path for path in out.rglob("*") if path.suffix in (".html", ".css", ".txt")]
    assert pages and not [path for path in pages if re.search(r"\{\{|\{%", path.read_text(encoding="utf-8"))]
    notebook = json.loads((course / "notebooks" / "01_next.ipynb").read_text())
    notebook["cells"].append(markdown("```{no-such-directive}\n```"))
    (course / "notebooks" / "01_next.ipynb").write_text(json.dumps(notebook))
    with pytest.raises(site.SiteError, match=r"notebooks/01_next.ipynb:\d+: (ERROR|WARNING): .*no-such-directive"):
        site.build(out, course, tmp_path / "stage")


# ---- Binder links: from a configured repository, else the git remote, else none --------------------------------------


def test_a_configured_repository_gives_every_page_its_binder_link(course, tmp_path):
    site.stage(site.pages(course), tmp_path / "stage", course, site.repository(course, "me/parallelism-course"))
    for source in ("notebooks/00_map.ipynb", "notebooks/01_next.ipynb", "labs/01_lab.ipynb"):
        cells = staged(tmp_path / "stage", source)["cells"]
        title = next(cell["source"] for cell in cells if cell["cell_type"] == "markdown")
        binder = f"https://mybinder.org/v2/gh/me/parallelism-course/HEAD?urlpath=lab/tree/{source}"
        assert f'<a href="{binder}">Binder</a>' in title, source


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/me/parallelism-course.git", "me/parallelism-course"),
        ("https://github.com/me/parallelism-course", "me/parallelism-course"),
        ("git@github.com:me/parallelism-course.git", "me/parallelism-course"),
        ("https://gitlab.com/me/parallelism-course.git", None),  # Binder's gh/ provider is GitHub's
        ("https://github.com/OWNER/REPO.git", None),
        (None, None),  # no remote
    ],
)
def test_without_a_configured_repository_the_git_remote_origin_gives_it(tmp_path, remote, expected):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", remote], check=True)
    assert site.repository(tmp_path) == expected


@pytest.mark.parametrize(
    ("configured", "message"),
    [
        ("OWNER/REPO", "is a placeholder"),
        ("owner/name", "is a placeholder"),
        ("me", "is not a GitHub repository: give it as owner/name"),
        ("https://github.com/me/course", "is not a GitHub repository"),
        ("-me/course", "is not a GitHub repository"),
        ("me/course/extra", "is not a GitHub repository"),
    ],
)
def test_a_bad_repository_is_refused_naming_it(configured, message):
    with pytest.raises(site.SiteError, match=f"^REPO={re.escape(repr(configured))} {message}"):
        site.repository(configured=configured)


def test_no_placeholder_binder_link_in_the_readme_or_a_notebook():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    notebooks = [path.read_text(encoding="utf-8") for path in sorted(ROOT.glob("notebooks_py/*.py"))]
    for text in (readme, *notebooks):
        assert "OWNER/REPO" not in text
        for repository in re.findall(r"mybinder\.org/v2/gh/([^/\s)]+/[^/\s)]+)/", text):
            assert site.GITHUB_REPOSITORY.match(repository) and repository.lower() not in site.PLACEHOLDERS


# ---- the built site: no template files, no template code -------------------------------------------------------------


def test_the_themes_template_files_are_left_out_and_template_code_stops_the_build(tmp_path):
    out = tmp_path / "site"
    (out / "_static" / "scripts").mkdir(parents=True)
    (out / "_static" / "webpack-macros.html").write_text("<link href=\"{{ pathto('_static/x.css', 1) }}\">")
    (out / "_static" / "scripts" / "webpack-macros.html").write_text("{% macro head() %}{% endmacro %}")
    (out / "page.html").write_text("<p>fine</p><pre>{{ code }}</pre><script>x = {{}};</script>")
    (out / "_static" / "tex.js").write_text("macros: {{x}}")  # a script's braces are its own
    assert site.remove_templates(out) == ["_static/scripts/webpack-macros.html", "_static/webpack-macros.html"]
    site.check_no_template_code(out)
    (out / "notebooks").mkdir()
    (out / "notebooks" / "01.html").write_text("<p>Open {{ pathto('x') }}</p>")
    with pytest.raises(site.SiteError, match=r"^notebooks/01.html: holds template code \('\{\{'"):
        site.check_no_template_code(out)
    (out / "notebooks" / "01.html").write_text("<p>{% if x %}</p>")
    with pytest.raises(site.SiteError, match=r"notebooks/01.html: holds template code \('\{%'"):
        site.check_no_template_code(out)
