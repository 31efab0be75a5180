"""``QuestionBox``: the "jump to when…" box moves a TimeTravel to the steps ``find`` answers, marks
``find_all`` hits (blue) and invariant violations (teal) on its strip, and shows query errors."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("ipywidgets")

from agentscope.examples import python_machines as pm
from agentscope.pipeline import Timeline
from agentscope.queries import check
from agentscope.widgets import QuestionBox, TimeTravel
from tests.conftest import load_json


@pytest.fixture(scope="module")
def view() -> TimeTravel:
    m = pm.triage_machine()
    return TimeTravel(m, load_json("g_triage.main.log.json"), engine="text")


def test_jump_to_when_moves_the_view(view: TimeTravel) -> None:
    tl: Timeline = view.timeline
    box = QuestionBox(view, "event.type == 'REJECT'")
    want = tl.find_all("event.type == 'REJECT'")
    assert box.hits == want == [23, 43, 80]
    assert [v for _, v in box.list.options] == want
    view.step = 0
    assert box.jump(+1) == 23 and view.step == 23
    assert box.jump(+1) == 43 and view.step == 43
    assert box.jump(-1) == 23 and view.step == 23
    view.step = 85
    assert box.jump(+1) is None and view.step == 85
    assert "no later step" in box.status.value
    box.list.value = 80
    assert view.step == 80
    assert box.strip.value.count('fill="#1e88e5"') == 3  # one blue tick per hit


def test_query_errors_are_shown_not_raised(view: TimeTravel) -> None:
    box = QuestionBox(view)
    assert box.ask("context.x >") == []
    assert "unexpected end of expression" in box.status.value
    box.text.value = "in('<b>nowhere</b>')"
    assert "&lt;b&gt;" in box.status.value and "<b>nowhere" not in box.status.value


def test_first_violation_marked_and_shown(view: TimeTravel) -> None:
    box = QuestionBox(view)
    df = box.check({"no rejects": "context.rejections == 0"})
    want = check(view.timeline, {"no rejects": "context.rejections == 0"})
    assert df.equals(want)
    assert view.step == int(want["index"].iloc[0]) == 23
    assert "first at entry 23" in box.status.value
    assert 'fill="#00897b"' in box.strip.value  # violations in their own colour


def test_first_violation_on_the_static_player_track() -> None:
    m = pm.triage_machine()
    view = TimeTravel(m, load_json("g_triage.main.log.json"), engine="text")
    assert 'fill="#00897b"' not in view.to_html()
    box = QuestionBox(view)
    box.check({"no rejects": "context.rejections == 0"})
    assert view.marks[23] == "violation" and list(view.marks.values()).count("violation") == 1
    page = view.to_html()
    assert page.count('fill="#00897b"') == 1  # the first violation, in its own colour
    # every violating entry reaches the player (its "first violation" button and rows)
    data = json.loads(re.search(r'id="as-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    want = sorted(int(i) for i in check(view.timeline, {"no rejects": "context.rejections == 0"})["index"])
    assert view.violation_indices == want and data["violations"] == want and want[0] == 23
    box.check({"always": "true"})
    assert "violation" not in view.marks.values()
