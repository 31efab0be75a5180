"""The statechart layout: literal labels, no phantom nodes, machine-only cached layout, one lit edge
per step, huge charts within the time budget, the legend."""

from __future__ import annotations

import html
import re
import warnings
from typing import Any

import pytest

from agentscope.engines.base import Graph, StateNodeInfo, TransitionInfo
from agentscope.render import ObservedEdge, frame_svg, graph_from_config, layout, state_element_id
from agentscope.render.chart import (
    EXPAND_MAX_STATES,
    LAYOUT_BUDGET_S,
    _overlaps,
    _text_boxes,
    available_engines,
    expansion,
    geometry,
    legend_html,
)
from agentscope.render.source import step_info
from tests._charts import fifty_config, huge_config
from tests.conftest import FIXTURES, MACHINES, load_json, requires_node

HOSTILE = [
    "<lambda> <map>",
    "<b>",
    '"',
    "\\",
    "a\\nb",
    "{x|y}",
    "node",
    "edge",
    "subgraph",
    "cluster_0",
    "🚀 launch",
    "&amp;",
    "x & y",
]
ENGINES = [e for e in available_engines() if e in ("graphviz-pure", "dot")]


def _flat(names: list[str]) -> Graph:
    nodes = {
        "m": StateNodeInfo(
            id="m",
            key="",
            path=(),
            kind="compound",
            parent=None,
            children=tuple(f"m.{k}" for k in range(len(names))),
            initial="m.0",
        )
    }
    for k, name in enumerate(names):
        nodes[f"m.{k}"] = StateNodeInfo(id=f"m.{k}", key=name, path=(name,), kind="atomic", parent="m")
    trans = tuple(
        TransitionInfo(
            source=f"m.{k}", event=names[(k + 1) % len(names)], targets=(f"m.{(k + 1) % len(names)}",)
        )
        for k in range(len(names))
    )
    return Graph(machine_id="m", root="m", nodes=nodes, transitions=trans)


def _texts(svg: str, group_class: str) -> list[str]:
    out = []
    for m in re.finditer(rf'<g id="[^"]+" class="{group_class}[^"]*">(.*?)</g>', svg, re.S):
        out.extend(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", m.group(1)))
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_every_state_name_is_drawn_literally(engine: Any) -> None:
    g = _flat(HOSTILE)
    lay = layout(g, engine=engine)
    assert lay.engine == engine  # no fallback to the text tree
    drawn = _texts(lay.svg, "node")
    for name in HOSTILE:
        assert name in drawn, (name, drawn)
    edges = _texts(lay.svg, "edge")
    for name in HOSTILE:  # edge labels are the event names: literal too
        assert name in edges, (name, edges)
    assert "<b>" not in lay.svg and "<lambda>" not in lay.svg  # never markup


def test_root_level_on_draws_no_phantom_node() -> None:
    g = graph_from_config(load_json("a_counter.machine.json")["serializeMachine"])
    lay = layout(g)
    node_ids = re.findall(r'<g id="([^"]+)" class="node', lay.svg)
    declared = set(lay.plan.states.values()) | {f"{v}_i" for v in lay.plan.states.values()}
    declared |= {f"{v}_q" for v in lay.plan.states.values()} | {f"{v}_ax" for v in lay.plan.states.values()}
    assert node_ids and set(node_ids) <= declared, set(node_ids) - declared
    assert not re.search(r"<text[^>]*>as_s_", lay.svg)  # no node labelled with an internal id
    root = state_element_id("counter")
    assert re.search(rf'<g id="{root}" class="cluster', lay.svg)  # the root holds its own `on`
    dyn = [i for i, t in enumerate(g.transitions) if t.source == "counter"]
    assert len(dyn) == 3 and len({lay.plan.transitions[i] for i in dyn}) == 1  # INC, DEC, RESET: one edge


def test_layout_depends_on_the_machine_alone_and_is_cached() -> None:
    g = graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])
    base = layout(g)
    assert layout(g) is base  # once per machine structure
    obs = [
        ObservedEdge(
            "supportTriage.working.awaitingAgent.reviewing", "supportTriage.working.selecting", "APPROVE"
        ),
        ObservedEdge("supportTriage.standby", "supportTriage.working", "TICKETS_RECEIVED"),
    ]
    a = layout(g, observed_edges=obs[:1])
    b = layout(g, observed_edges=obs)
    ga, gb = geometry(a.svg), geometry(b.svg)
    assert ga == gb == geometry(base.svg)  # identical node and cluster positions
    assert a.svg.startswith(base.svg[: base.svg.rfind("</g>")])  # overlay appended, nothing moved
    assert 'class="edge as-edge as-observed"' in a.svg


@requires_node
def test_one_lit_edge_per_move_on_the_real_log() -> None:
    import agentscope as asc
    from agentscope.engines.xstate import load_machine
    from agentscope.render.source import iter_frames

    log = asc.read_log(FIXTURES / "g_triage.sqlite", thread="main")
    with load_machine(MACHINES / "triage.mjs", export="triageMachine") as m:
        frames = list(iter_frames(asc.Timeline(m, log)))
        g = m.graph
    infos = [step_info(g, frames[k - 1] if k else None, f) for k, f in enumerate(frames)]
    lay = layout(g, observed_edges=[mv for i in infos for mv in i.moves])
    moved = 0
    for info in infos:
        svg = frame_svg(lay, info.active, taken_edge=info.moves)
        lit = re.findall(r'<g id="([^"]+)" class="[^"]*as-taken', svg)
        assert len(lit) == len(set(lit)) == len({lay.edge_elements(mv) for mv in info.moves}), (info, lit)
        for mv in info.moves:
            assert len(lay.edge_elements(mv)) == 1  # exactly the edge that fired, never its "→ ?" twin
        moved += bool(info.moves)
    assert moved >= len(frames) // 2
    # no two labels overlap: static edge labels are moved off each other once at layout, observed
    # labels are placed where no text is
    boxes, texts = _text_boxes(lay.svg)
    clash = [
        (texts[i].group(8), texts[j].group(8))
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if _overlaps(boxes[i], [boxes[j]])
    ]
    assert clash == []


def test_legend_lists_every_convention() -> None:
    legend = legend_html()
    for item in (
        "active",
        "entered",
        "exited",
        "taken edge",
        "observed edge",
        "dynamic target",
        "history",
        "final",
    ):
        assert f'data-legend="{item}"' in legend
    fork = legend_html(fork=True)
    assert all(f'data-legend="active in {s}"' in fork for s in ("a", "b", "both"))


def test_huge_chart_lays_out_within_the_budget_collapsed() -> None:
    g = graph_from_config(huge_config())
    assert len(g.nodes) > 1_800 and len(g.transitions) > 5_000
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lay = layout(g)
    assert not [w for w in caught if "no Graphviz engine" in str(w.message)]
    assert lay.engine != "text" and lay.collapsed  # summarised clusters, still a drawing
    assert lay.seconds < LAYOUT_BUDGET_S
    # collapsed because of its size, on every machine (not because a layout ran out of time)
    assert lay.note and f"more than {EXPAND_MAX_STATES:,}" in lay.note and " s:" not in lay.note
    assert lay.collapsed == {f"huge.g{k}" for k in range(30)}
    assert layout(g) is lay  # reused: to_html and every view get this layout, no second run
    active = {"huge", "huge.g7", "huge.g7.s33"}
    svg = frame_svg(lay, active)
    assert "as-chart-note" in svg and "active: g7 › s33" in svg  # the active path is always shown
    lit = re.findall(r'<g id="([^"]+)" class="[^"]*as-active', svg)
    assert state_element_id("huge.g7") in lit
    assert "g7 (60 states)" in html.unescape(svg)
    # the box holding the active state opens on click as a chart of its own: its 60 states and
    # the transitions among them laid out, the transitions crossing its border summarised
    box = state_element_id("huge.g7")
    assert svg.count('class="as-expand"') == 1
    assert f'<details class="as-expand" data-box="{box}"><summary>expand g7 (60 states)</summary>' in svg
    assert "g7: 60 states; 60 transitions leave it, 60 enter it from outside" in svg
    sub = expansion(lay, "huge.g7")
    assert sub.engine != "text" and not sub.collapsed and sub.note is None
    assert expansion(lay, "huge.g7") is sub  # laid out once per machine
    assert set(sub.graph.nodes) == {"huge.g7", *(f"huge.g7.s{k}" for k in range(60))}
    assert all(t.source in sub.graph.nodes and set(t.targets) <= set(sub.graph.nodes) for t in sub.graph.transitions)
    assert len(sub.graph.transitions) == 60 * 2 + 1  # NEXT and SKIP per state, the box's RESET
    part = svg[svg.index('<details class="as-expand"') : svg.index("</details>")]
    inner = re.findall(r'<g id="([^"]+)" class="node[^"]*"', part)
    assert {sub.plan.states[f"huge.g7.s{k}"] for k in range(60)} <= set(inner)
    lit_inner = re.findall(r'<g id="([^"]+)" class="[^"]*as-active', part)
    assert set(lit_inner) == {sub.plan.states["huge.g7"], sub.plan.states["huge.g7.s33"]}
    assert _texts(part, "node").count("s33") == 1 and "<text" in part  # drawn, not listed
    # a move inside the box lights exactly its edge in the expansion (the main chart has none)
    move = ObservedEdge("huge.g7.s33", "huge.g7.s34", "NEXT")
    moved = frame_svg(lay, {"huge", "huge.g7", "huge.g7.s34"}, taken_edge=[move], entered=["huge.g7.s34"])
    part = moved[moved.index('<details class="as-expand"') : moved.index("</details>")]
    assert re.findall(r'<g id="([^"]+)" class="[^"]*as-taken', part) == list(sub.edge_elements(move))
    assert len(sub.edge_elements(move)) == 1
    assert re.findall(r'<g id="([^"]+)" class="[^"]*as-entered', part) == [sub.plan.states["huge.g7.s34"]]
    with pytest.raises(KeyError):
        expansion(lay, "huge.g7.s1")


def test_fifty_states_keep_a_readable_minimum_size() -> None:
    g = graph_from_config(fifty_config())
    assert len(g.nodes) >= 50
    lay = layout(g)
    m = re.match(r'<svg width="([\d.]+)pt" data-readable-width="(\d+)"', lay.svg)
    assert m is not None
    # zoomed to its readable width a 12 pt label is >= 9 px: 12 * 4/3 * width / natural_width
    natural_px = float(m.group(1)) * 4 / 3
    assert 16 * int(m.group(2)) / natural_px >= 9


def test_transitions_the_engine_reports_light_exactly_their_edges() -> None:
    from dataclasses import dataclass

    from agentscope.render.chart import moves_from_taken

    @dataclass(frozen=True)
    class Taken:  # the shape of agentscope.engines.base.TakenTransition
        microstep: int
        event: str
        source: str
        targets: tuple[str, ...]
        edge: int | None

    g = graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])
    lay = layout(g)
    k = next(
        i for i, t in enumerate(g.transitions) if t.event == "CLOSE_SHIFT" and t.source.endswith("paused")
    )
    d = next(i for i, t in enumerate(g.transitions) if t.dynamic and t.event == "APPROVE")
    taken = [
        Taken(0, "CLOSE_SHIFT", g.transitions[k].source, g.transitions[k].targets, k),
        Taken(0, "xstate.init", g.root, (), None),  # the initial entry is no move
    ]
    moves = moves_from_taken(g, taken)
    assert moves == (ObservedEdge(g.transitions[k].source, g.transitions[k].targets[0], "CLOSE_SHIFT"),)
    svg = frame_svg(lay, {"paused": {}}, taken_edge=moves)
    assert re.findall(r'<g id="([^"]+)" class="[^"]*as-taken', svg) == list(lay.plan.transitions[k])
    # a function transition with its resolved target: the observed edge when drawn, else its "?" edge
    tgt = "supportTriage.working.selecting"
    (mv,) = moves_from_taken(g, [Taken(0, "APPROVE", g.transitions[d].source, (tgt,), d)])
    assert lay.edge_elements(mv) == lay.plan.transitions[d]
    with_obs = layout(g, observed_edges=[mv])
    assert with_obs.edge_elements(mv) == (with_obs.plan.observed[mv],)


def test_an_expanded_box_too_big_to_draw_is_itself_summarised() -> None:
    from agentscope.render.chart import EXPAND_MAX_STATES, _base_layout, subgraph

    inner = {f"part{p}": {"initial": "s0", "states": {f"s{k}": {"on": {"NEXT": f"s{(k + 1) % 310}"}}
                                                       for k in range(310)}} for p in range(2)}
    cfg = {"id": "m", "initial": "big", "states": {"big": {"initial": "part0", "states": inner},
                                                   "idle": {"on": {"GO": "big"}}}}
    g = graph_from_config(cfg)
    sub, leaving, entering = subgraph(g, "m.big")
    assert len(sub.nodes) == 1 + 2 * 311 > EXPAND_MAX_STATES and (leaving, entering) == (0, 1)
    assert sub.root == "m.big" and sub.nodes["m.big"].parent is None and sub.nodes["m.big"].path == ()
    lay = _base_layout(sub, None, "asx0", 4.0, skip_full=True)
    assert lay.engine != "text" and lay.collapsed == {"m.big.part0", "m.big.part1"}
    assert lay.note and f"more than {EXPAND_MAX_STATES:,}" in lay.note
