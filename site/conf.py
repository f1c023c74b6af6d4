"""Sphinx configuration of the course's website (`make site`; tools/site.py stages the pages and runs Sphinx).

tools/site.py passes what depends on the build (the home page, the staged static folder) as overrides; everything
here is the same for every build. Nothing here fetches anything: MathJax is served from the site (tools/site.py
copies it from the django-static-mathjax wheel), the theme's fonts and scripts ship with the theme, and the
notebooks' widgets are replaced by their static pictures before Sphinx reads them.
"""

import re
import sys
from pathlib import Path

from docutils import nodes

# tools.site.jupyter_anchor (myst_heading_slug_func below) is imported by name, so that the setting can be cached.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

project = "Parallelism as a memory and communication budget"
author = "the course's authors"
copyright = "the course's authors"
html_title = project

extensions = ["myst_nb"]
# The site is built from the notebooks' stored outputs: nothing is executed.
nb_execution_mode = "off"
# No ipywidgets scripts from a CDN: tools/site.py replaces every live widget by its static picture or text.
nb_ipywidgets_js = {}
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
# $$...$$ inside a paragraph is display maths, as JupyterLab shows it (the lessons write "as follows:\n$$F = ...$$").
myst_dmath_double_inline = True
# Anchors as JupyterLab makes them ("What you'll learn" -> "What-you'll-learn"), so that the notebooks' links
# `02_nccl.ipynb#The-science` resolve both in JupyterLab and on the site.
myst_heading_anchors = 6
myst_heading_slug_func = "tools.site.jupyter_anchor"

# MathJax 3, from the site itself (a path relative to _static/).
mathjax_path = "mathjax/tex-chtml.js"

html_theme = "sphinx_book_theme"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
    "navigation_with_keys": False,
}
# The light theme unless the reader chose another: without a default the theme logs a console error on a first visit.
html_context = {"default_mode": "light"}
# A favicon of its own: without one the browser asks for /favicon.ico, which a static host may not have (a 404).
html_favicon = "_static/favicon.svg"
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_search_scorer = str(Path(__file__).resolve().parent / "search_scorer.js")
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
exclude_patterns = [".doctrees"]

# The glossary's entries are rows of a table, each with an HTML anchor (`<a id="gemm"></a>`: glossary_entries),
# which the lessons link as `glossary.ipynb#gemm`, as JupyterLab follows them. MyST resolves a link's #id against a
# page's headings and its Sphinx labels only, so each such anchor is registered as a label of its page (named
# "page:id", so two pages may use the same id); Sphinx forgets a page's labels when it reads the page again.
_HTML_ANCHOR = re.compile(r'<a\s+id="([A-Za-z0-9_-]+)"')


def _register_html_anchors(app, doctree):
    labels = app.env.get_domain("std").anonlabels
    for raw in doctree.findall(nodes.raw):
        for anchor in _HTML_ANCHOR.findall(raw.astext()):
            labels[f"{app.env.docname}:{anchor}"] = (app.env.docname, anchor)


def setup(app):
    app.connect("doctree-read", _register_html_anchors)
