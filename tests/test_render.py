"""Statechart drawing: DOT structure on real machines, layout once / restyle per frame, escaping."""

from __future__ import annotations

import hashlib
import json
import re
import warnings

import pytest

from agentscope.engines.base import Graph, StateNodeInfo, TransitionInfo
from agentscope.render import (
    ObservedEdge,
    context_html,
    esc,
    frame_svg,
    graph_from_config,
    json_for_script,
    layout,
    plan_dot,
    state_element_id,
    taken_edges,
    to_dot,
)
from agentscope.render import chart as layout_mod
from agentscope.render.chart import LayoutError, available_engines
from tests.conftest import load_json

TRIAGE = "supportTriage"


@pytest.fixture(scope="module")
def triage() -> Graph:
    return graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])


@pytest.fixture(scope="module")
def triage_layout(triage: Graph) -> layout_mod.Layout:
    return layout(triage)


def _cluster_block(dot: str, state_id: str) -> str:
    """The DOT text of one cluster, up to its first nested subgraph or closing brace."""
    name = f"cluster_{state_element_id(state_id)}"
    start = dot.index(f"subgraph {name}")
    return dot[start : start + 400]


def test_graph_from_config_reads_the_real_triage_structure(triage: Graph) -> None:
    n = triage.nodes
    assert triage.root == TRIAGE
    assert n[f"{TRIAGE}.working"].kind == "compound"
    assert n[f"{TRIAGE}.working"].initial == f"{TRIAGE}.working.selecting"
    assert n[f"{TRIAGE}.working.analyzing"].kind == "parallel"
    assert n[f"{TRIAGE}.working.hist"].kind == "history"
    assert n[f"{TRIAGE}.working.hist"].history == "shallow"
    assert n[f"{TRIAGE}.closed"].kind == "final"
    resume = [t for t in triage.transitions if t.event == "RESUME"]
    assert resume[0].targets == (f"{TRIAGE}.working.hist",)
    approve = [t for t in triage.transitions if t.event == "APPROVE"]
    assert approve[0].dynamic and approve[0].targets == ()


def test_dot_has_clusters_regions_final_history_initial(triage: Graph) -> None:
    dot = to_dot(triage)
    # compound and parallel states are clusters; regions of a parallel state are dashed
    for sid in ("working", "working.analyzing", "working.awaitingAgent"):
        assert f"subgraph cluster_{state_element_id(f'{TRIAGE}.{sid}')}" in dot
    for region in ("classification", "knowledge"):
        assert "dashed" in _cluster_block(dot, f"{TRIAGE}.working.analyzing.{region}")
    assert "dashed" not in _cluster_block(dot, f"{TRIAGE}.working.awaitingAgent").split("\n")[1]
    # final states have a double border, history is an H circle
    closed = re.search(rf"{state_element_id(TRIAGE + '.closed')} \[([^\]]*)\]", dot)
    assert closed is not None and "peripheries=2" in closed.group(1)
    hist = re.search(rf"{state_element_id(TRIAGE + '.working.hist')} \[([^\]]*)\]", dot)
    assert hist is not None and "label=H " in hist.group(1) + " " and "circle" in hist.group(1)
    # one initial point per compound (root, working, awaitingAgent, classification, knowledge)
    assert len(re.findall(r"shape=point width=0\.08", dot)) == 5


def test_dot_labels_events_guards_and_dynamic_targets(triage: Graph) -> None:
    plan = plan_dot(triage)
    dot = plan.source
    assert 'label="REJECT [context.rejections<2]"' in dot
    assert "label=RESUME " in dot
    assert 'label="always [context.queue.length===0]"' in dot
    dyn = [i for i, t in enumerate(triage.transitions) if t.dynamic]
    assert len(dyn) == 8
    sources = {triage.transitions[i].source for i in dyn}
    assert len(sources) == 7  # standby has two (TICKETS_RECEIVED, and working's PAUSE is its own)
    for i in dyn:
        q = state_element_id(triage.transitions[i].source) + "_q"
        assert f'{q} [label="?"' in dot
        (eid,) = plan.transitions[i]
        lines = [x for x in dot.splitlines() if f"-> {q} [" in x]
        assert len(lines) == 1  # one "?" edge per source, however many dynamic transitions
        assert "style=dashed" in lines[0] and f"id={eid}" in lines[0] and "→ ?" in lines[0]
    assert dot.count('[label="?"') == len(sources)


def test_layout_svg_has_stable_ids_for_every_state(triage: Graph, triage_layout: layout_mod.Layout) -> None:
    assert triage_layout.engine == available_engines()[0]
    for sid in triage.nodes:
        if sid == triage.root:
            continue
        assert f'id="{state_element_id(sid)}"' in triage_layout.svg, sid
    again = layout(triage)
    assert again.svg == triage_layout.svg  # deterministic
    assert "<!--" not in triage_layout.svg and triage_layout.svg.startswith("<svg")
    # labels are escaped by Graphviz in the SVG text
    assert "REJECT [context.rejections&lt;2]" in triage_layout.svg


def test_observed_edges_are_drawn_distinctly_and_only_when_new(triage: Graph) -> None:
    new = ObservedEdge(f"{TRIAGE}.working.awaitingAgent.reviewing", f"{TRIAGE}.working.selecting", "APPROVE")
    covered = ObservedEdge(f"{TRIAGE}.paused", f"{TRIAGE}.closed", "CLOSE_SHIFT")
    lay = layout(triage, observed_edges=[new, covered])
    assert set(lay.plan.observed) == {new}
    eid = lay.plan.observed[new]
    assert re.search(rf'<g id="{eid}" class="edge as-edge as-observed"', lay.svg)
    # drawn over the machine-only layout: everything before the overlay is the plain layout
    assert lay.svg.startswith(layout(triage).svg[: layout(triage).svg.rfind("</g>")])
    # the covered move maps to the static CLOSE_SHIFT edge, the new one to the dynamic edge + observed
    static = [
        i
        for i, t in enumerate(triage.transitions)
        if t.source == f"{TRIAGE}.paused" and t.event == "CLOSE_SHIFT"
    ]
    assert lay.edge_elements(covered) == lay.plan.transitions[static[0]]
    assert lay.edge_elements(new) == (eid,)  # only the edge that fired, not the "→ ?" twin


def test_frame_restyling_only_changes_classes(triage: Graph, triage_layout: layout_mod.Layout) -> None:
    a = frame_svg(triage_layout, "standby")
    b = frame_svg(
        triage_layout,
        {"working": {"analyzing": {"classification": "running", "knowledge": "searching"}}},
        taken_edge=ObservedEdge(f"{TRIAGE}.standby", f"{TRIAGE}.working", "TICKETS_RECEIVED"),
        entered=[f"{TRIAGE}.working"],
        exited=[f"{TRIAGE}.standby"],
    )
    assert a != b
    strip = re.compile(r" as-(?:active|entered|exited|taken)")
    inner = lambda s: s[s.index("<svg") : s.index("</svg></div>") + 6]  # noqa: E731
    assert 'class="as-legend"' in a
    assert strip.sub("", inner(a)) == triage_layout.svg == strip.sub("", inner(b))
    no_class = re.compile(r' class="[^"]*"')
    assert no_class.sub("", inner(a)) == no_class.sub("", inner(b))  # geometry bytes identical
    lit = set(re.findall(r'<g id="([^"]+)" class="[^"]*as-active', b))
    want = {
        state_element_id(f"{TRIAGE}.working{s}")
        for s in (
            "",
            ".analyzing",
            ".analyzing.classification",
            ".analyzing.classification.running",
            ".analyzing.knowledge",
            ".analyzing.knowledge.searching",
        )
    }
    assert lit == want
    assert len(re.findall(r'class="[^"]*as-taken', b)) == 1  # the dynamic TICKETS_RECEIVED edge of standby
    assert re.search(rf'<g id="{state_element_id(TRIAGE + ".standby")}" class="[^"]*as-exited', b)


def test_taken_edges_infers_moves_from_configurations(triage: Graph) -> None:
    before = triage.active_ids({"working": {"awaitingAgent": "reviewing"}})
    after = triage.active_ids({"working": {"awaitingAgent": "drafting"}})
    moves = taken_edges(triage, before, after, "REJECT")
    assert moves == [
        ObservedEdge(
            f"{TRIAGE}.working.awaitingAgent.reviewing", f"{TRIAGE}.working.awaitingAgent.drafting", "REJECT"
        )
    ]
    assert taken_edges(triage, before, before, "NOT_HANDLED") == []
    # a journaled completion matches the invoke's descriptor; a re-entry is a move onto itself
    analyzing = triage.active_ids(
        {"working": {"analyzing": {"classification": "running", "knowledge": "searching"}}}
    )
    done = {"type": "xstate.done.actor", "actorId": "classify", "sessionId": "s", "output": {}}
    after = triage.active_ids(
        {"working": {"analyzing": {"classification": "complete", "knowledge": "searching"}}}
    )
    assert taken_edges(triage, analyzing, after, done) == [
        ObservedEdge(
            f"{TRIAGE}.working.analyzing.classification.running",
            f"{TRIAGE}.working.analyzing.classification.complete",
            "xstate.done.actor.classify",
        )
    ]
    err = {"type": "xstate.error.actor", "actorId": "kb", "error": {"message": "timeout"}}
    searching = f"{TRIAGE}.working.analyzing.knowledge.searching"
    assert taken_edges(triage, analyzing, analyzing, err) == [
        ObservedEdge(searching, searching, "xstate.error.actor.kb")
    ]


def test_text_fallback_warns_once_and_restyles(triage: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout_mod, "available_engines", lambda: ["text"])
    monkeypatch.setattr(layout_mod, "_warned_no_engine", False)
    with pytest.warns(RuntimeWarning, match="no Graphviz engine"):
        lay = layout(triage)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layout(triage)  # second time: silent
    assert lay.engine == "text" and lay.svg.startswith('<pre class="as-tree">')
    out = frame_svg(lay, "paused")
    assert re.search(rf'<span id="{state_element_id(TRIAGE + ".paused")}" class="as-node as-active">', out)
    assert "RESUME → hist" in out


def test_forced_missing_engine_raises(triage: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout_mod.shutil, "which", lambda *a, **k: None)
    with pytest.raises(LayoutError, match="dot"):
        layout(triage, engine="dot")


def _hostile_graph() -> Graph:
    bad = '</svg><script>alert(1)</script>"\\N'
    nodes = {
        "m": StateNodeInfo(
            id="m", key="", path=(), kind="compound", parent=None, children=("m.a", "m.b"), initial="m.a"
        ),
        "m.a": StateNodeInfo(id="m.a", key=bad, path=(bad,), kind="atomic", parent="m"),
        "m.b": StateNodeInfo(id="m.b", key="<b>", path=("<b>",), kind="final", parent="m"),
    }
    return Graph(
        machine_id="m",
        root="m",
        nodes=nodes,
        transitions=(
            TransitionInfo(
                source="m.a", event="<img src=x onerror=alert(1)>", targets=("m.b",), guard="a<b&&c"
            ),
        ),
    )


def test_hostile_names_are_escaped_in_dot_and_svg() -> None:
    g = _hostile_graph()
    lay = layout(g, observed_edges=[ObservedEdge("m.b", "m.a", "</script><!--x")])
    assert "<script" not in lay.svg and "</svg>" not in lay.svg[:-6] and "<img" not in lay.svg
    assert "<!--" not in lay.svg
    assert "&lt;/svg&gt;&lt;script&gt;" in lay.svg
    assert "&lt;img src=x onerror=alert(1)&gt; [a&lt;b&amp;&amp;c]" in lay.svg
    text = layout(g, engine="text")
    assert "<script" not in text.svg and "&lt;/svg&gt;" in text.svg


def test_a_state_named_by_a_lone_surrogate_gets_a_distinct_element_id() -> None:
    # "\ud800" is a legal JS string (and state key); UTF-8 cannot encode it
    ids = {state_element_id(s) for s in ("m.\ud800", "m.\udc00", "m.\ufffd", "m._")}
    assert len(ids) == 4 and all(re.fullmatch(r"as_s_[A-Za-z0-9_]*_[0-9a-f]{8}", i) for i in ids)
    assert state_element_id("m.a") == "as_s_m_a_" + hashlib.blake2s(b"m.a", digest_size=4).hexdigest()
    lay = layout(graph_from_config({"id": "m", "initial": "a", "states": {"a": {"on": {"E": "\ud800"}}, "\ud800": {}}}))
    eid = state_element_id("m.\ud800")
    assert f'id="{eid}"' in lay.svg


@pytest.mark.parametrize(
    ("key", "label"),
    [("1500", "after 1500ms"), ("PT1S", "after PT1S"), ("1.5s", "after 1.5s"), ("200ms", "after 200ms"), ("slow", "after slow")],
)
def test_after_edges_are_labelled_by_their_delay_key(key: str, label: str) -> None:
    from agentscope.render.dot import edge_label

    t = TransitionInfo(source="m.a", event=f"xstate.after.{key}.m.a", targets=("m.b",), kind="after")
    assert edge_label(t) == label


def test_context_tree_escapes_and_bounds_hostile_values() -> None:
    deep: object = "bottom"
    for _ in range(200):
        deep = {"d": deep}
    value = {
        "xss": "<script>alert(1)</script>",
        "svg": "</svg><!--",
        "big": "x" * 1_000_000,
        "deep": deep,
        "list": list(range(10_000)),
        "<k>": 1,
    }
    out = context_html(value, changed_paths=["/context/xss"])
    assert "<script" not in out and "</svg>" not in out and "<!--" not in out and "<k>" not in out
    assert esc("<script>alert(1)</script>") in out
    assert len(out) < 120_000
    assert "… +999,800 chars" in out and "979,800 more chars not shown" in out
    assert "(depth limit 12)" in out and "… 9,800 more members" in out
    assert re.search(r'<div class="as-leaf as-changed" data-path="/context/xss">', out)
    assert '<details class="as-node as-haschange" data-path="/context" open>' in out


def test_context_filter_keeps_matches_and_ancestors() -> None:
    value = {
        "queue": [{"id": "T-1", "subject": "Login loop"}, {"id": "T-2", "subject": "Refund"}],
        "team": "tier1",
    }
    out = context_html(value, filter="refund")
    assert "Refund" in out and "Login loop" not in out and "tier1" not in out
    assert 'data-path="/context/queue/1/subject"' in out
    assert (
        context_html(value, filter="queue").count('data-path="/context/queue/') == 6
    )  # matching container keeps all
    assert "no match for" in context_html(value, filter="zzz")


def test_json_for_script_neutralises_script_and_comments() -> None:
    text = json_for_script({"a": "</script><script>x</script>", "b": "<!-- -->", "c": "\u2028&"})
    assert "</script" not in text and "<!--" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><script>x</script>", "b": "<!-- -->", "c": "\u2028&"}


def test_engine_graphs_draw_like_the_config_graph(triage: Graph) -> None:
    """The Python engine's and the Node engine's own graphs of the triage machine draw the same states."""
    from agentscope.examples.python_machines import triage_machine

    graphs = [triage_machine().graph]
    from tests.conftest import node_ready

    if node_ready():
        from agentscope.engines.xstate import load_machine
        from tests.conftest import MACHINES

        with load_machine(MACHINES / "triage.mjs", export="triageMachine") as m:
            graphs.append(m.graph)
    want = plan_dot(triage)
    for g in graphs:
        plan = plan_dot(g)
        assert plan.states == want.states
        lay = layout(g)
        for sid in g.nodes:
            if sid != g.root:
                assert f'id="{state_element_id(sid)}"' in lay.svg
        kinds = {t.kind for t in g.transitions}
        assert {"on", "always", "invoke.onDone", "invoke.onError", "onDone"} <= kinds
        dyn = [i for i, t in enumerate(g.transitions) if t.dynamic]
        assert dyn and all(f'id="{state_element_id(g.transitions[i].source)}_q"' in lay.svg for i in dyn)
