"""Rebuild the gallery: static players of the bundled examples, and screenshots of them.

Run by ``make docs`` (and by hand: ``python docs/gallery/make_gallery.py``). Every picture is made
from the bundled support-triage store and machine, through the public API, then photographed in
headless Chromium (Debian's ``/usr/bin/chromium`` driven by Playwright). Without Chromium the
players are still rebuilt and the committed pictures kept, with a note on stderr.

Outputs, all under ``docs/gallery/``: ``players/*.html`` (the self-contained players the gallery
page embeds) and ``img/*.png``.
"""

from __future__ import annotations

import copy
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PLAYERS = HERE / "players"
IMG = HERE / "img"
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# (file stem, step to show or None for the player's own start, CSS selector to photograph)
Shot = tuple[str, "int | str | None", str]


def build_players() -> list[Shot]:
    """Write the players and return what to photograph in each."""
    sys.path.insert(0, str(REPO))
    import agentscope as asc
    from agentscope.examples import example_path

    PLAYERS.mkdir(parents=True, exist_ok=True)
    # relative to the clone's root: the players and tables name it so, not by a local path
    store = Path(os.path.relpath(example_path("g_triage.sqlite"), REPO))
    os.chdir(REPO)
    machine = asc.load_machine(example_path("machines/triage.mjs"))
    main = asc.read_log(store, thread="main")
    fork = asc.read_log(store, thread="fork")
    shots: list[Shot] = []

    # 1. a mismatch: the knowledge base's confidence edited in a copy of entry 7
    edited = copy.deepcopy(main.entries)
    edited[7]["event"]["output"]["confidence"] = 0.99
    tt = asc.TimeTravel(machine, edited)
    tt.first_mismatch()
    tt.to_html(PLAYERS / "mismatch.html")
    shots.append(("mismatch", tt.step, "viewport"))

    # 2. the real run at a parallel state (classification and knowledge search side by side),
    #    and just after RESUME, where the shallow history state brought the agent back
    tt = asc.TimeTravel(machine, main)
    tt.to_html(PLAYERS / "triage.html")
    shots.append(("parallel", 2, "viewport"))
    shots.append(("history", 10, "viewport"))

    # 3. the fork view at the divergence
    fv = asc.ForkView(machine, main, fork, names=("main", "fork"))
    fv.to_html(PLAYERS / "forkview.html")
    shots.append(("forkview", "divergence", "viewport"))

    # 4. questions: the coverage heat map over both threads, and "jump to when…" (a question
    #    box's invariant violations on the player's track)
    cov = asc.coverage([main, fork], machine)
    (PLAYERS / "coverage.html").write_text(cov.to_html(), encoding="utf-8")
    shots.append(("coverage", None, "viewport"))
    from agentscope.widgets import QuestionBox

    tl = asc.Timeline(machine, fork)
    tt = asc.TimeTravel(machine, fork, timeline=tl)
    box = QuestionBox(tt)
    box.check({"one rejection": "context.rejections <= 1"})
    tt.to_html(PLAYERS / "questions.html")
    shots.append(("questions", tt.step, "viewport"))
    machine.close()
    return shots


def photograph(shots: list[Shot]) -> None:
    """Screenshot each player at its step into ``img/``."""
    from playwright.sync_api import sync_playwright

    IMG.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 1000}, device_scale_factor=1,
        )
        page = ctx.new_page()
        for stem, step, selector in shots:
            player = "triage" if stem in ("parallel", "history") else stem
            url = (PLAYERS / f"{player}.html").as_uri()
            if step is not None:
                url += f"#{step}"
            page.goto(url)
            page.wait_for_load_state("load")
            if isinstance(step, int):
                # players that predate step links: move there through the "go to" box
                box = page.query_selector("#as-goto")
                if box is not None:
                    box.fill(str(step))
                    box.dispatch_event("change")
            elif step == "divergence":
                button = page.query_selector("#as-div")
                if button is not None and button.is_enabled():
                    button.click()
            page.wait_for_timeout(300)
            if selector == "viewport":
                page.screenshot(path=str(IMG / f"{stem}.png"))
            else:
                page.locator(selector).first.screenshot(path=str(IMG / f"{stem}.png"))
            print(f"gallery: img/{stem}.png")
        ctx.close()


NOTEBOOKS = REPO / "notebooks"
PUBLISHED = REPO / "docs" / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


STYLES = "notebook.css"
_STYLE = re.compile(r"<style[^>]*>.*?</style>", re.S)


def share_styles(pages: dict[str, str]) -> dict[str, str]:
    """Move the style blocks every page has (nbconvert's template, ~7,000 lines) into one
    ``notebook.css`` beside the pages, linked from each; a page's own styles stay inline."""
    blocks = {name: _STYLE.findall(text) for name, text in pages.items()}
    common = [b for b in next(iter(blocks.values()), []) if all(b in v for v in blocks.values())]
    if not common:
        return pages
    css = "\n".join(re.sub(r"^<style[^>]*>|</style>$", "", b) for b in common)
    (PUBLISHED / STYLES).write_text(css, encoding="utf-8")
    out = {}
    for name, text in pages.items():
        for n, b in enumerate(common):
            text = text.replace(b, f'<link rel="stylesheet" href="{STYLES}">' if n == 0 else "", 1)
        out[name] = text
    return out


def publish_notebooks() -> None:
    """Execute the notebooks and write each as a static HTML page under ``docs/notebooks/``.

    A widget's output is published as its static ``text/html`` fallback (the current step's chart,
    badge and context), because a page with no kernel and no network cannot run the widget.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    PUBLISHED.mkdir(parents=True, exist_ok=True)
    pages: dict[str, str] = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if WIDGET_VIEW in data and "text/html" in data:
                    del data[WIDGET_VIEW]
        nb.metadata.pop("widgets", None)
        body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
        # the page makes no request off the site: drop the template's CDN scripts (MathJax,
        # Mermaid, require.js), which these notebooks do not use
        body = re.sub(r"<script[^>]*>(?:(?!</script>).)*?cdnjs\.cloudflare\.com.*?</script>", "", body,
                      flags=re.S)
        body = re.sub(r"<script[^>]*src=\"https://[^\"]*\"[^>]*>\s*</script>", "", body)
        pages[f"{path.stem}.html"] = body
    for name, text in share_styles(pages).items():
        (PUBLISHED / name).write_text(text, encoding="utf-8")
        print(f"gallery: notebooks/{name}")


def main() -> int:
    publish_notebooks()
    shots = build_players()
    if not CHROMIUM.exists():
        print("gallery: /usr/bin/chromium not found; players rebuilt, pictures kept as committed",
              file=sys.stderr)
        return 0
    photograph(shots)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
