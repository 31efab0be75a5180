"""The HTML fragments behind ``_repr_html_``: escaped and bounded for hostile log content."""

from __future__ import annotations

import re

import pandas as pd

from agentscope.frames import Frame, Verdict
from agentscope.render import graph_from_config, layout
from agentscope.render.context import pointer_join
from agentscope.render.html import (
    MarkerStrip,
    Sparkline,
    badge_html,
    fork_diff_html,
    frame_html,
    log_html,
    marker_strip_svg,
    sparkline_svg,
    verify_report_html,
)
from tests.conftest import load_json

XSS = "<script>alert(1)</script></svg><!--"


def hostile_entry(i: int = 3) -> dict:
    deep: object = XSS
    for _ in range(200):
        deep = {"d": deep}
    return {
        "schemaVersion": 1,
        "id": XSS,
        "index": i,
        "recordedAt": XSS,
        "machineId": "m",
        "machineVersion": "v",
        "causationId": XSS,
        "event": {"type": XSS, "big": "b" * 1_000_000, "deep": deep},
        "verification": {"stateHash": XSS},
    }


def _clean(html: str) -> None:
    body = html[html.index("</style>") + 8 :] if "</style>" in html else html
    assert "<script" not in body and "<!--" not in body and "</svg><" not in body.replace("</svg></div>", "")


def test_frame_html_escapes_and_bounds_everything() -> None:
    graph = graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])
    persisted = {
        "status": "active",
        "value": "standby",
        "context": {XSS: XSS, "big": "c" * 1_000_000},
        "children": {XSS: {"src": XSS, "snapshot": {"status": XSS, "input": XSS}}},
        "timers": {XSS: {"delay": XSS, "event": {"type": XSS}}},
    }
    f = Frame(
        index=3,
        entry=hostile_entry(),
        persisted=persisted,
        recorded_hash=XSS,
        computed_hash="00000000",
        verdict=Verdict.MISMATCH,
        explanation=XSS,
        changed_paths=(pointer_join("/context", XSS),),
        ignored=True,
    )
    html = frame_html(f, layout(graph))
    _clean(html)
    assert len(html) < 200_000
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'data-verdict="mismatch"' in html and "ignored" in html
    assert re.search(r'class="as-leaf as-changed" data-path="/context/&lt;script', html)
    no_machine = frame_html(Frame(index=0, entry=hostile_entry(0)))
    assert "replay needs a machine" in no_machine
    _clean(no_machine)


def test_badges_for_every_verdict() -> None:
    e = {"event": {"type": "X"}}
    for v in Verdict:
        b = badge_html(
            Frame(
                index=0,
                entry=e,
                recorded_hash="aaaa0000",
                computed_hash="bbbb1111",
                verdict=v,
                explanation="timers[*].startedAt is live-only",
            )
        )
        assert f'data-verdict="{v.value}"' in b
    mm = badge_html(
        Frame(index=0, entry=e, recorded_hash="aaaa0000", computed_hash="bbbb1111", verdict=Verdict.MISMATCH)
    )
    assert "aaaa0000" in mm and "bbbb1111" in mm


def test_log_report_and_fork_fragments_escape() -> None:
    entries = [hostile_entry(i) for i in range(30)]
    html = log_html(entries, source=XSS)
    _clean(html)
    assert "30 entries" in html and html.count("<tr>") == 1 + 10 + 1 + 3  # head, 10 rows, gap, 3 tail rows
    mism = pd.DataFrame({"index": [4, 9], "event_type": [XSS, "B"], "recorded_hash": [XSS, "x"]})
    rep = verify_report_html(False, 30, mism)
    _clean(rep)
    assert "2 mismatches of 30, first at entry 4" in rep
    assert "all 30 verified" in verify_report_html(True, 30, mism.iloc[:0])
    fork = fork_diff_html(18, 18, entries[:2], entries[:3], [(XSS, XSS, {"a": XSS})], names=(XSS, "b"))
    _clean(fork)
    assert "diverge at entry 18" in fork


def test_sparkline_and_strip_are_bounded() -> None:
    spark = sparkline_svg([float(i) for i in range(100_000)], current=500, width=240)
    assert len(spark) < 20_000 and "as-spark-cur" in spark
    # the cursor sits at x = 2 + (240 - 4) * 500 / 99_999, y = 36 - 2 - (36 - 4) * 500 / 99_999
    assert 'cx="3.2" cy="33.8"' in spark and "tokens: 500</span>" in spark
    strip = marker_strip_svg(100_000, {i: "mismatch" for i in range(0, 100_000, 3)}, current=7, width=600)
    assert strip.count("<rect") <= 600 + 2
    assert strip.count('fill="#e53935"') == 600  # every pixel column holds a mismatch tick
    assert '<rect x="0" y="0" width="1" height="8" fill="#263238"/>' in strip  # cursor at 7 -> px 0


def test_strip_and_sparkline_drawn_once_give_the_same_svg_at_every_cursor() -> None:
    values = [0.0, 5.0, 5.0, 40.0, 41.5, 90.0, 90.0]
    marks = {1: "explained", 3: "mismatch", 4: "missing", 6: "divergence"}
    spark, strip = Sparkline(values, label="cumulative tokens"), MarkerStrip(len(values), marks, width=520)
    for current in (None, -1, 0, 3, 6, 7):
        assert spark.svg(current) == sparkline_svg(values, current, label="cumulative tokens")
        assert strip.svg(current) == marker_strip_svg(len(values), marks, current, width=520)
    assert 'cy="2.0"' in spark.svg(5) and "cumulative tokens: 90</span>" in spark.svg(5)
    assert strip.svg(None).count("<rect") == 1 + 4  # background + four ticks, no cursor


def test_the_repr_helper_escapes_caps_and_says_what_it_left_out() -> None:
    """``render.reprs``: values in, escaped and bounded HTML out, with a note for what was cut."""
    from agentscope.render.reprs import MAX_CELL, Code, Facts, Items, Para, Pre, Table, repr_html

    evil = "</td><script>alert(1)</script>\ud800"
    out = repr_html("x", [
        Para("log ", Code(evil)),
        Table(["a", evil], [[evil, {"k": [1, None]}], [None, "y" * 5_000]] * 40, more=7, where=".df"),
        Facts([("n", float("nan"))]),
        Items([evil] * 60),
        Pre("z" * 30_000),
    ])
    assert "<script" not in out and "</td><script" not in out and "&lt;script&gt;" in out
    assert "\\ud800" in out and "\ud800" not in out  # a lone surrogate shown as JSON writes it
    assert out.count("<tr>") == 1 + 50 + 1  # header, 50 rows, one fact
    assert "… 37 more rows in .df" in out  # 30 rows not drawn + 7 never passed
    assert "… 10 more items" in out and "… [+10,000 chars]" in out
    assert "y" * (MAX_CELL - 1) + "…" in out and "y" * (MAX_CELL + 1) not in out
    assert '{"k": [1, null]}' in out.replace("&quot;", '"') and "<td>—</td>" in out


def test_a_repr_that_fails_shows_the_error_instead_of_hiding_it() -> None:
    from agentscope.render.reprs import guarded

    class Broken:
        def __repr__(self) -> str:
            return "<Broken <b>>"

    def build() -> list[object]:
        raise KeyError("state_hash")

    out = guarded(Broken(), "eventlog", build)
    assert "&lt;Broken &lt;b&gt;&gt;" in out and "KeyError: &#x27;state_hash&#x27;" in out
    assert out.startswith('<div class="agentscope-eventlog"><pre>')
