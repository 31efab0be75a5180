"""``QuestionBox``: "jump to when…" and invariant markers for a :class:`TimeTravel` view.

A text box for a query expression (:meth:`agentscope.pipeline.Timeline.find`), buttons to jump to
the next / previous step where it holds, a strip with a blue tick per ``find_all`` hit and a
teal tick per invariant violation (:func:`agentscope.check`), and a list of the hits to jump to.
It only drives the view's ``step``; every answer comes from the view's timeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets

from agentscope.errors import QueryError
from agentscope.render.html import MarkerStrip

__all__ = ["QuestionBox"]

_MAX_LISTED = 500


class QuestionBox(ipywidgets.VBox):  # type: ignore[misc]
    """Ask a :class:`~agentscope.widgets.TimeTravel` (or any widget with ``step`` and
    ``timeline``) "when…" questions.

    Parameters
    ----------
    view : TimeTravel
        The view to move; its ``timeline`` (a :class:`~agentscope.pipeline.Timeline`) answers.
    expression : str, optional
        An initial expression (``"context.rejections >= 1"``); its hits are marked at once.

    Attributes
    ----------
    hits : list of int
        Indices where the current expression holds (``find_all``).
    violations : pandas.DataFrame or None
        The last :meth:`check` result.
    """

    def __init__(self, view: Any, expression: str = "") -> None:
        self.view = view
        self.timeline = view.timeline
        self.hits: list[int] = []
        self.violations: Any = None
        self._violation_marks: dict[int, str] = {}
        self.text = ipywidgets.Text(value=expression, placeholder="context.retries > 3",
                                    description="jump to when…", continuous_update=False,
                                    style={"description_width": "initial"},
                                    layout=ipywidgets.Layout(width="460px"))
        self.prev_button = ipywidgets.Button(description="◀ previous", layout={"width": "100px"})
        self.next_button = ipywidgets.Button(description="next ▶", layout={"width": "100px"})
        self.status = ipywidgets.HTML()
        self.strip = ipywidgets.HTML()
        self.list = ipywidgets.Dropdown(options=[], description="hits", layout={"width": "260px"})
        self.next_button.on_click(lambda _: self.jump(+1))
        self.prev_button.on_click(lambda _: self.jump(-1))
        self.text.observe(lambda ch: self.ask(ch["new"]), names="value")
        self.list.observe(self._on_pick, names="value")
        view.observe(lambda _: self._draw(), names="step")
        super().__init__([
            ipywidgets.HBox([self.text, self.prev_button, self.next_button, self.list]),
            self.strip, self.status,
        ])
        if expression:
            self.ask(expression)
        else:
            self._draw()

    # -- questions ---------------------------------------------------------------------------
    def ask(self, expression: str) -> list[int]:
        """Mark every step where ``expression`` holds; returns the hits (``[]`` on an error,
        which is shown under the box)."""
        expression = expression.strip()
        if not expression:
            self.hits = []
            self._say("")
        else:
            try:
                self.hits = self.timeline.find_all(expression)
            except QueryError as exc:
                self.hits = []
                self._say(f"<pre style='color:#c62828;margin:0'>{_esc(str(exc))}</pre>")
                self._refresh_list()
                self._draw()
                return []
            self._say(f"{len(self.hits)} step(s) match")
        self._refresh_list()
        self._draw()
        return self.hits

    def jump(self, direction: int = +1) -> int | None:
        """Move the view to the next (``+1``) or previous (``-1``) hit after / before its step;
        returns the index, or ``None`` when there is none (the view stays)."""
        expression = self.text.value.strip()
        if not expression:
            return None
        step = int(self.view.step)
        try:
            if direction >= 0:
                found = self.timeline.find(expression, start=step + 1)
            else:
                if not self.hits:
                    self.ask(expression)
                earlier = [i for i in self.hits if i < step]
                found = earlier[-1] if earlier else None
        except QueryError as exc:
            self._say(f"<pre style='color:#c62828;margin:0'>{_esc(str(exc))}</pre>")
            return None
        if found is None:
            self._say("no " + ("later" if direction >= 0 else "earlier") + " step matches")
            return None
        self.view.step = int(found)
        return int(found)

    def check(
        self,
        invariants: Mapping[str, Any] | None = None,
        *,
        loop: int | None = None,
        stuck: Any = None,
    ) -> Any:
        """Run :func:`agentscope.check`, mark every violation on the strip (teal) and move the
        view to the first one; returns the violations DataFrame.

        The first violation is also added to the view's ``marks`` (kind ``"violation"``, unless
        the entry already carries a verdict mark), so the static player the view writes
        (``view.to_html()``) shows it on its track like a mismatch, in its own colour; every
        violating index goes to the view's ``violation_indices`` (the player's "first
        violation" button)."""
        from agentscope.queries import check

        df = check(self.timeline, invariants, loop=loop, stuck=stuck)
        self.violations = df
        self._violation_marks = {int(i): "violation" for i in df["index"]}
        if isinstance(getattr(self.view, "violation_indices", None), list):
            self.view.violation_indices = sorted({int(i) for i in df["index"]})
        marks = getattr(self.view, "marks", None)
        if isinstance(marks, dict):
            for i in [k for k, v in marks.items() if v == "violation"]:
                del marks[i]
            if len(df) and int(df["index"].iloc[0]) not in marks:
                marks[int(df["index"].iloc[0])] = "violation"
        if len(df):
            first = df.iloc[0]
            self.view.step = int(first["index"])
            self._say(f"{len(df)} violation(s); first at entry {int(first['index'])}: "
                      f"{_esc(str(first['invariant']))}")
        else:
            self._say("every invariant holds")
        self._draw()
        return df

    # -- drawing -----------------------------------------------------------------------------
    def _say(self, html_text: str) -> None:
        self.status.value = f"<div style='font-size:12px'>{html_text}</div>"

    def _refresh_list(self) -> None:
        shown = self.hits[:_MAX_LISTED]
        self.list.options = [(f"#{i}", i) for i in shown]
        self.list.value = None

    def _on_pick(self, change: Mapping[str, Any]) -> None:
        if change.get("new") is not None:
            self.view.step = int(change["new"])

    def _draw(self) -> None:
        n = len(self.timeline)
        marks: dict[int, str] = {i: "hit" for i in self.hits}
        marks.update(self._violation_marks)
        self.strip.value = MarkerStrip(n, marks).svg(int(self.view.step))


def _esc(text: str) -> str:
    from agentscope.render._escape import esc

    return esc(text)
