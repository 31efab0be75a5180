"""The views' ``text/html`` fallback: the steppable static player, embedded (issue 26).

A front end without a widget manager — ``jupyter nbconvert --to html`` of a saved notebook, a
notebook viewer, an e-mailed export — shows a widget's ``text/html`` output instead of the
widget. :func:`steppable_fallback` makes that output the self-contained player the view's
``to_html()`` writes (the same page: chart, context, entries, slider, keys; no kernel, no
network), in an ``<iframe srcdoc>`` (its ids and script stay its own, beside other outputs),
opened at the step the widget showed. Its size is bounded: a view of more than
:data:`FALLBACK_MAX_STEPS` steps, or whose player is longer than the view's ``fallback_cap``
(default :data:`FALLBACK_CAP`), falls back to the one static step, with a note that says so and
how to write the whole player.
"""

from __future__ import annotations

import html
from collections.abc import Callable

__all__ = ["FALLBACK_CAP", "FALLBACK_MAX_STEPS", "steppable_fallback"]

FALLBACK_CAP = 2_000_000
"""Longest player a view embeds as its ``text/html`` fallback, in characters of HTML (2 MB; the
91-step triage log's player takes about 155,000). A view's ``fallback_cap`` attribute overrides
it for that view."""

FALLBACK_MAX_STEPS = 1_000
"""Most steps of a view whose fallback is the player: the player is built each time the view is
displayed (about 2 ms a step), so a longer view shows its current step only, and a note."""

_ONLOAD = (
    "try{{var f=this,w=f.contentWindow;w.location.hash='{step}';"
    "setTimeout(function(){{f.style.height=(w.document.documentElement.scrollHeight+24)+'px';}},50);"
    "}}catch(e){{}}"
)
"""The frame's ``onload``: open the player at the widget's step (the player follows its address's
``#N``) and fit the frame to the page; a front end that forbids it keeps step 0 and the fixed
height."""


def steppable_fallback(
    page: Callable[[], str],
    static: Callable[[], str],
    *,
    name: str,
    step: int,
    steps: int,
    cap: int = FALLBACK_CAP,
) -> str:
    """The ``text/html`` fallback of a view: its steppable player, or its static step and a note.

    Parameters
    ----------
    page : callable
        Builds the view's self-contained player page (``to_html()``), called only within the
        step cap.
    static : callable
        Builds the view's current step as static HTML (``static_html()``).
    name : str
        The view's class name, for the frame's title and the note (``"TimeTravel"``).
    step, steps : int
        The step the widget shows (the player opens there) and how many steps it has.
    cap : int
        Longest player embedded, in characters (:data:`FALLBACK_CAP`).

    Returns
    -------
    str
        An ``<iframe srcdoc>`` holding the page (escaped as an attribute value), or the static
        step followed by a ``<div class="as-meta as-fallback-note">`` saying why and how to get
        the whole player (``to_html(path)``).
    """
    if steps > FALLBACK_MAX_STEPS:
        why = (f"this {name} has {steps:,} steps, more than the {FALLBACK_MAX_STEPS:,} a notebook "
               "output embeds")
        return static() + _note(why, step)
    doc = page()
    if len(doc) > cap:
        why = (f"the steppable player of this {name} is {len(doc) / 1e6:.1f} MB, over the "
               f"{cap / 1e6:g} MB cap of a notebook output (fallback_cap)")
        return static() + _note(why, step)
    title = f"agentscope {name}: steppable player of {steps:,} steps (no kernel needed)"
    return (
        f'<iframe class="as-fallback-player" title="{html.escape(title)}" '
        f'style="width:100%;height:1200px;border:0" srcdoc="{html.escape(doc, quote=True)}" '
        f'onload="{html.escape(_ONLOAD.format(step=int(step)), quote=True)}"></iframe>'
    )


def _note(why: str, step: int) -> str:
    return (
        f'<div class="as-meta as-fallback-note">Static view of step {int(step)} only: '
        f"{html.escape(why)}. Write the whole steppable player with "
        "<code>.to_html(&quot;player.html&quot;)</code>.</div>"
    )
