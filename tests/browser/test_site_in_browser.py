"""The course's website (`make site`, tools/site.py) in Chromium, as a reader with nothing installed sees it.

The site is built once for the module (tools.site.build, into a pytest temporary folder: never build/site) and served
on 127.0.0.1 by a thread of this process. One walk opens every page once, at a desktop size, and records what the
tests below judge:

- every page loads with no console error, no uncaught error, no failed request and no request leaving localhost
  (MathJax, fonts and scripts come from the site itself);
- every link inside the site lands on a file, and on an element with that id when it names one;
- every image loaded (natural width > 0) and has an alt text;
- no raw ``$...$`` is left in any page's text, and the course map's notation table is typeset by MathJax;
- the offline search finds "ring all-reduce" and its first result opens lesson 02;
- at a phone's size (390 × 844) neither the course map nor a lesson scrolls sideways.

Screenshots of the course map and of lesson 02 go to ``$BROWSER_ARTIFACTS`` (or a pytest temporary folder). Run
alone: ``.venv/bin/python -m pytest -p no:nbval tests/browser/test_site_in_browser.py -rP`` (about a minute on the
course's 2-core machine: half of it the build).
"""

from __future__ import annotations

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tools import site as site_tool

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
MATHJAX_TIMEOUT_MS = 30_000

# Waits for MathJax's first typesetting (when the page loads MathJax), then reads what the tests judge.
READ_PAGE = """
async (timeoutMs) => {
  const settled = (async () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
    await document.fonts.ready;
    await Promise.all(Array.from(document.images, (image) => image.decode().catch(() => null)));
  })();
  await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, timeoutMs))]);
  const article = document.querySelector('article') || document.body;
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container, .math').forEach((node) => node.remove());
  return {
    ids: Array.from(document.querySelectorAll('[id]'), (node) => node.id),
    links: Array.from(document.querySelectorAll('a[href]'), (node) => node.href),
    images: Array.from(document.images, (image) => ({
      src: image.currentSrc || image.src, loaded: image.complete && image.naturalWidth > 0,
      alt: (image.getAttribute('alt') || '').trim()})),
    text: clone.textContent,
    maths: document.querySelectorAll('mjx-container').length,
  };
}
"""
RAW_MATH = re.compile(r"\$[^$\s][^$]*\$")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a browser that closes a page mid-download (a broken pipe) is no error of the site


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    site_tool.build(out)
    return out


@pytest.fixture(scope="module")
def site_url(built_site):
    server = QuietServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(built_site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def open_page(context, url: str) -> tuple[dict, list[str]]:
    """Open ``url`` in a new page of ``context``: what READ_PAGE reads, and every problem seen while loading."""
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
            if message.type == "error" else None)  # fmt: skip
    page.on("pageerror", lambda error: problems.append(f"uncaught error: {error}"))
    page.on("requestfailed", lambda request: problems.append(f"request failed: {request.url} ({request.failure})"))
    page.on("response", lambda response: problems.append(f"HTTP {response.status}: {response.url}")
            if response.status >= 400 else None)  # fmt: skip

    def outside(request):
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in LOCAL_HOSTS:
            problems.append(f"request leaving localhost: {request.url}")

    page.on("request", outside)
    try:
        page.goto(url, wait_until="load")
        seen = page.evaluate(READ_PAGE, MATHJAX_TIMEOUT_MS)
    finally:
        page.close()
    return seen, problems


@pytest.fixture(scope="module")
def desktop(browser):
    context = browser.new_context(viewport=DESKTOP, device_scale_factor=1)
    context.set_default_timeout(MATHJAX_TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture(scope="module")
def walk(built_site, site_url, desktop) -> dict[str, tuple[dict, list[str]]]:
    """Every HTML page of the site opened once: {path in the site: (what it shows, problems while loading)}.
    index.html only sends the browser on to the course map (test_screenshots follows it); _static/ holds the theme's
    files, not pages."""
    paths = [path.relative_to(built_site).as_posix() for path in sorted(built_site.rglob("*.html"))]
    return {
        path: open_page(desktop, site_url + path) for path in paths if path != "index.html" and "_static/" not in path
    }


def test_the_site_has_every_lesson_and_lab(walk):
    expected = {f"{page.docname}.html" for page in site_tool.pages()}
    assert expected <= set(walk), f"pages missing from the site: {sorted(expected - set(walk))}"
    assert len(expected) >= 9  # the course map, its lessons and labs, the instructors' page


def test_no_template_file_or_template_code_in_the_site(built_site):
    # issue 41: the theme's webpack-macros.html with raw `{{ pathto(...) }}` was shipped. Pages, stylesheets and text
    # files only: scripts (MathJax's TeX macros) use braces as their own syntax.
    shipped = [path.relative_to(built_site).as_posix() for path in built_site.glob("_static/**/*.html")]
    assert not shipped, f"theme templates shipped: {shipped}"
    for path in sorted(built_site.rglob("*")):
        if path.suffix in (".html", ".css", ".txt"):
            text = path.read_text(encoding="utf-8")
            assert "{{" not in text and "{%" not in text, f"{path.relative_to(built_site)} holds template code"


def test_the_sidebar_lists_the_core_path_first_and_numbers_every_lesson_and_lab(built_site):
    home = (built_site / f"{site_tool.pages()[0].docname}.html").read_text(encoding="utf-8")
    captions = re.findall(r'class="caption-text">([^<]+)<', home)
    assert captions[:1] == ["Core path"] and "Reference" in captions, captions
    entries = re.findall(r'<a class="reference internal" href="(?:\.\./)?(?:labs/)?(\d\d)_[^"]*">([^<]+)</a>', home)
    assert len(entries) >= len([page for page in site_tool.pages() if re.search(r"/\d\d_", page.source)]) - 1
    for number, title in entries:
        assert re.match(rf"(Lab {int(number)}|{number}) · ", title), f"sidebar entry {title!r} is not numbered {number}"


def test_every_page_loads_cleanly_and_stays_on_localhost(walk):
    problems = {path: found for path, (_, found) in walk.items() if found}
    assert not problems, f"pages with load problems: {problems}"


def test_every_internal_link_resolves(walk, built_site, site_url):
    ids = {path: set(seen["ids"]) for path, (seen, _) in walk.items()}
    broken = []
    for path, (seen, _) in walk.items():
        for link in seen["links"]:
            if not link.startswith(site_url):
                continue
            parts = urlsplit(link)
            target = unquote(parts.path).removeprefix(urlsplit(site_url).path) or "index.html"
            if target.endswith("/"):
                target += "index.html"
            if not (built_site / target).is_file():
                broken.append(f"{path}: {link} (no file {target})")
            elif parts.fragment and target in ids and unquote(parts.fragment) not in ids[target]:
                broken.append(f"{path}: {link} (no id #{parts.fragment} in {target})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_image_loads_and_has_alt_text(walk):
    images = [(path, image) for path, (seen, _) in walk.items() for image in seen["images"]]
    assert len(images) >= 20  # every lesson's figures and every lab's picture
    bad = [f"{path}: {image}" for path, image in images if not image["loaded"] or not image["alt"]]
    assert not bad, "images not loaded or without alt text:\n" + "\n".join(bad)


def test_maths_is_typeset(walk):
    home = f"{site_tool.pages()[0].docname}.html"
    assert walk[home][0]["maths"] >= 10, "the course map's notation table is not typeset by MathJax"
    raw = {
        path: RAW_MATH.findall(seen["text"])[:3] for path, (seen, _) in walk.items() if RAW_MATH.search(seen["text"])
    }
    assert not raw, f"raw $...$ left in the text of: {raw}"


def lesson(number: str) -> str:
    return next(page.docname for page in site_tool.pages() if page.docname.startswith(f"notebooks/{number}_"))


def test_search_finds_ring_allreduce_in_lesson_02(desktop, site_url):
    page = desktop.new_page()
    try:
        page.goto(site_url + "search.html?q=ring+all-reduce")
        first = page.locator("#search-results ul.search li a").first
        first.wait_for()
        first.click()
        page.wait_for_load_state("load")
        assert urlsplit(page.url).path.endswith(f"/{lesson('02')}.html"), page.url
    finally:
        page.close()


@pytest.mark.parametrize("which", ["home", "lesson"])
def test_no_horizontal_scroll_on_a_phone(browser, site_url, which):
    docname = site_tool.pages()[0].docname if which == "home" else lesson("02")
    context = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(site_url + f"{docname}.html")
        page.evaluate("async () => { if (window.MathJax) await MathJax.startup.promise; }")
        overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{docname}: the page is {overflow} px wider than a 390 px phone"
    finally:
        context.close()


def test_screenshots(desktop, site_url, artifacts_dir):
    """The course map and lesson 02 (its equations and first figure), kept as artefacts."""
    page = desktop.new_page()
    try:
        page.goto(site_url + "index.html")
        page.wait_for_url(re.compile(re.escape(site_tool.pages()[0].docname) + r"\.html$"))
        page.evaluate("async () => { await MathJax.startup.promise; }")
        page.screenshot(path=artifacts_dir / "site-course-map.png")
        page.goto(site_url + f"{lesson('02')}.html#The-science")
        page.evaluate("async () => { await MathJax.startup.promise; }")
        page.screenshot(path=artifacts_dir / "site-lesson-02.png")
    finally:
        page.close()
    print(f"screenshots in {artifacts_dir}")
    for name in ("site-course-map.png", "site-lesson-02.png"):
        assert (artifacts_dir / name).stat().st_size > 10_000
