"""Redaction is applied once, before any view reads the data: no page of either player (the
single-log player of ``show --html`` and ``TimeTravel.to_html``, the fork player of
``diff --html`` and ``ForkView.to_html``) carries a redacted value or key, in any encoding.

The log is recorded live (:class:`agentscope.Recorder`) from a machine whose context is keyed by
e-mail address (``tests/redaction_machines.py``): the addresses are built from the real triage
fixture's tickets, and hypothesis adds addresses and names with quotes, ``<``, ``&``, non-ASCII
and lone surrogates.
"""

from __future__ import annotations

import html
import json
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentscope as asc
from agentscope.cli import main
from agentscope.frames import Frame
from agentscope.recorder import Recorder
from agentscope.render._escape import json_for_script
from agentscope.render.redact import REDACTED, Redaction
from tests.conftest import FIXTURES
from tests.redaction_machines import contacts_machine

MACHINE = "py:tests.redaction_machines:contacts_machine"

# every place an address or a name travels in the contacts machine's log and snapshots
PATHS = [
    "/event/email",
    "/event/name",
    "/event/output/sentTo",  # xstate.done.actor of the welcome actor
    "/event/id",  # xstate.timer: the reminder's id carries the address
    "/context/byEmail",  # keyed by address: the keys go with it
    "/children",
    "/timers",
]


def _record(people: Sequence[tuple[str, str]], fork_at: int | None = None) -> tuple[list[Any], list[Any]]:
    """The main log (every signup, then the reminders fire) and a fork of it after ``fork_at``
    entries that signs the last person up again under another name."""
    rec = Recorder(contacts_machine(), execution_id="00000000-0000-4000-8000-000000000001")
    for email, name in people:
        rec.send({"type": "SIGNUP", "email": email, "name": name, "plan": "pro"})
    fork = rec.fork(fork_at if fork_at is not None else len(rec.entries) - 1)
    rec.clock.advance(1)
    rec.advance(70_000)
    email, name = people[-1]
    fork.send({"type": "SIGNUP", "email": email, "name": name + " (again)", "plan": "team"})
    fork.advance(70_000)
    return list(rec.entries), list(fork.entries)


def _fixture_people() -> list[tuple[str, str]]:
    """Addresses and names made from the real triage fixture's tickets (ids and subjects)."""
    log = json.loads((FIXTURES / "g_triage.main.log.json").read_text(encoding="utf-8"))
    tickets = [t for e in log for t in e["event"].get("tickets", [])]
    assert len(tickets) >= 4
    return [(f"{t['id'].lower()}@customer.example", t["subject"]) for t in tickets[:4]]


def _forms(secret: str) -> set[str]:
    """Every way ``secret`` can be spelled in a page: raw, JSON (with and without ``\\u``
    escapes, either hex case, script-safe), HTML-escaped, URL-encoded, JSON-Pointer-escaped."""
    out = {secret}
    pointer = secret.replace("~", "~0").replace("/", "~1")
    for s in (secret, pointer):
        for ascii_only in (False, True):
            js = json.dumps(s, ensure_ascii=ascii_only)[1:-1]
            out |= {js, re.sub(r"\\u[0-9a-f]{4}", lambda m: m.group(0).upper().replace("\\U", "\\u"), js)}
        out.add(json_for_script(s)[1:-1])
        out |= {html.escape(s), html.escape(s, quote=False)}
        for q in (urllib.parse.quote, urllib.parse.quote_plus):
            out.add(q(s, safe="", errors="surrogatepass"))
            out.add(q(s, errors="surrogatepass"))
    return out


def _assert_hidden(page: str, secrets: Iterable[str], where: str) -> None:
    assert REDACTED in page or html.escape(REDACTED) in page, where
    for s in secrets:
        for form in _forms(s):
            assert form not in page, f"{where}: {s!r} appears as {form!r}"


def _pages(main_log: list[Any], fork_log: list[Any], paths: Sequence[str]) -> dict[str, str]:
    m = contacts_machine()
    tt = asc.TimeTravel(m, main_log)
    fv = asc.ForkView(m, main_log, fork_log, names=("main", "fork"))
    return {
        "TimeTravel.to_html": tt.to_html(redact=paths),
        "ForkView.to_html": fv.to_html(redact=paths),
    }


def _secrets(people: Iterable[tuple[str, str]]) -> set[str]:
    return {x for p in people for x in p} | {p[1] + " (again)" for p in people}


def test_no_page_of_either_player_carries_a_redacted_value_or_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    people = [*_fixture_people(), ("zq\ud800<&\"'~/é🙂@ex.test", "Nm\udfff</script><b>&amp;")]
    main_log, fork_log = _record(people)
    # the unredacted pages do hold the addresses (as keys, values, changed paths): the test sees them
    plain = _pages(main_log, fork_log, ())
    for page in plain.values():
        assert people[0][0] in page and f"/context/byEmail/{people[0][0]}" in page
    pages = _pages(main_log, fork_log, PATHS)
    (tmp_path / "main.json").write_text(json.dumps(main_log), encoding="utf-8")
    (tmp_path / "fork.json").write_text(json.dumps(fork_log), encoding="utf-8")
    code = main(["show", str(tmp_path / "main.json"), "--machine", MACHINE, "--limit", "0",
                 "--html", str(tmp_path / "show.html"), "--redact", *PATHS])
    assert code == 0, capsys.readouterr()
    code = main(["diff", str(tmp_path / "main.json"), str(tmp_path / "fork.json"), "--machine", MACHINE,
                 "--html", str(tmp_path / "diff.html"), "--redact", *PATHS])
    assert code in (0, 1), capsys.readouterr()
    capsys.readouterr()
    pages["show --html"] = (tmp_path / "show.html").read_text(encoding="utf-8")
    pages["diff --html"] = (tmp_path / "diff.html").read_text(encoding="utf-8")
    for where, page in pages.items():
        _assert_hidden(page, _secrets(people), where)
    # the redacted subtree is still reported as changed, cut at the redacted member
    data = json.loads(re.search(r'id="as-data">(.*?)</script>', pages["show --html"], re.S).group(1))  # type: ignore[union-attr]
    changed = {p for f in data["panes"][0]["frames"] for p in f.get("ch", [])}
    assert {"/context/byEmail", "/children", "/timers", "/context/count"} <= changed


_tricky = st.text(
    alphabet=st.one_of(
        st.sampled_from(['"', "'", "<", ">", "&", "/", "~", "\\", "\u2028", "é", "ß", "🙂", "\ud800", "\udfff"]),
        st.characters(exclude_categories=()),  # any code point, lone surrogates included
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_tricky, _tricky), min_size=2, max_size=3))
def test_generated_keys_and_values_never_reach_a_page(parts: list[tuple[str, str]]) -> None:
    people = [(f"zq{k}{a}@ex.test", f"Nm{k}{b}") for k, (a, b) in enumerate(parts)]
    main_log, fork_log = _record(people)
    for where, page in _pages(main_log, fork_log, PATHS).items():
        _assert_hidden(page, _secrets(people), where)


def test_changed_paths_are_cut_at_the_redacted_member() -> None:
    r = Redaction(["/context/byEmail", "/context/list/*/secret", "event.email"])
    assert r.pointer("/context/byEmail/a@x.org/name") == "/context/byEmail"
    assert r.pointer("/context/byEmail") == "/context/byEmail"
    assert r.pointer("/context/list/3/secret/deep") == "/context/list/3/secret"
    assert r.pointer("/context/list/3/other") == "/context/list/3/other"
    assert r.pointer("/context") == "/context"
    assert r.pointer("/event/email/x") == "/event/email"
    assert Redaction(["/context/a~1b"]).pointer("/context/a~1b/k~0") == "/context/a~1b"


# ---------------------------------------------------------------------------------------------
# every documented pointer, whole sections included (docs/how-to/share-player.md's table)

DOC = Path(__file__).resolve().parent.parent / "docs" / "how-to" / "share-player.md"
CONCRETE = {  # the table's "..." filled with a member the contacts log has
    "/event/...": "/event/email",
    "/metadata/...": "/metadata/executionId",
    "/context/...": "/context/byEmail",
    "/children/*/snapshot/input/...": "/children/*/snapshot/input/email",
    "/timers/*/event/...": "/timers/*/event/email",
}


def _documented_pointers() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    rows = [ln for ln in text.splitlines() if ln.startswith(("| the entry", "| the persisted snapshot"))]
    assert len(rows) == 2, "the pointer table of share-player.md moved"
    return [CONCRETE.get(p, p) for row in rows for p in re.findall(r"`([^`]+)`", row)]


POINTERS = _documented_pointers()


def _decoded(page: str) -> list[dict[str, Any]]:
    """Per step, what the single-log page shows, named as in the entry and the snapshot."""
    import jsonpatch

    data = json.loads(re.search(r'id="as-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    out: list[dict[str, Any]] = []
    ctx: Any = None
    for row in data["panes"][0]["frames"]:
        ctx = row["k"] if "k" in row else jsonpatch.apply_patch(ctx, row.get("d", []))
        out.append({
            "event": {**row["p"], "type": row["t"]}, "id": row["id"], "causationId": row.get("c"),
            "recordedAt": row["at"], "context": ctx, "status": row.get("st"),
            "children": [[a[0], a[3]] for a in row.get("ac", [])], "timers": [t[0] for t in row.get("tm", [])],
        })
    return out


def _shown(entry: Any, persisted: Any) -> dict[str, Any]:
    """What a page must show of one step whose entry and snapshot are these (the oracle)."""
    f = Frame(index=0, entry=entry, persisted=persisted)
    return {
        "event": {**{k: v for k, v in f.event.items() if k != "type"}, "type": f.event_type},
        "id": str(entry.get("id", "")),
        "causationId": str(entry["causationId"]) if "causationId" in entry else None,
        "recordedAt": str(entry.get("recordedAt", "")), "context": f.context, "status": str(f.status),
        "children": [[aid, _input(c)] for aid, c in f.children.items()], "timers": list(f.timers),
    }


def _input(child: Any) -> Any:
    snap = child.get("snapshot") if isinstance(child, dict) else None
    return snap.get("input") if isinstance(snap, dict) else None


def test_the_documented_pointers_are_the_tested_ones() -> None:
    assert set(POINTERS) >= {"/event", "/id", "/causationId", "/context", "/children", "/timers",
                             "/value", "/status", "/output", "/error", "/historyValue"}


@pytest.mark.parametrize("pointer", [*POINTERS, "/context/nothing/here", "/nothing"])
def test_every_documented_pointer_redacts_what_it_names(pointer: str) -> None:
    """Whole sections included: the page shows each step's entry and snapshot with exactly the
    named member replaced; a pointer to something absent changes nothing."""
    main_log, fork_log = _record(_fixture_people()[:2])
    m = contacts_machine()
    tt = asc.TimeTravel(m, main_log)
    frames = list(tt.frames())
    plain, page = _decoded(tt.to_html()), _decoded(tt.to_html(redact=[pointer]))
    fork_page = asc.ForkView(m, main_log, fork_log).to_html(redact=[pointer])  # the fork player too
    r = Redaction([pointer])
    assert plain == [_shown(f.entry, f.persisted) for f in frames]
    assert page == [_shown(r.entry(f.entry), r.snapshot(f.persisted)) for f in frames]
    hit = any(r.entry(f.entry) != f.entry or r.snapshot(f.persisted) != f.persisted for f in frames)
    assert hit == (pointer not in ("/context/nothing/here", "/nothing", "/causationId", "/output", "/error"))
    assert (REDACTED in fork_page) == (page != plain)  # shown in one player: in the other too


def test_a_frame_explanation_is_scrubbed_of_what_the_redaction_hides() -> None:
    """Free text (an explanation names pending timers by id) never carries a hidden key."""
    email = "zq@ex.test"
    main_log, _ = _record([(email, "Nm")])
    frame = next(f for f in asc.Timeline(contacts_machine(), main_log) if f.timers)
    why = f"pending after timer(s) remind:{email}: no startedAt reproduces it"
    shown = Redaction(["/timers"]).frame(replace(frame, explanation=why))
    assert shown.explanation == f"pending after timer(s) {REDACTED}: no startedAt reproduces it"
    assert shown.changed_paths == tuple(dict.fromkeys(
        "/timers" if p.startswith("/timers/") else p for p in frame.changed_paths))
    assert (shown.verdict, shown.computed_hash, shown.index) == (frame.verdict, frame.computed_hash, frame.index)


def test_a_redaction_path_that_names_no_value_is_exit_2_before_any_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for cmd in (["show", str(tmp_path / "absent.json"), "--html", str(tmp_path / "p.html")],
                ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--html", str(tmp_path / "p.html")]):
        with pytest.raises(SystemExit) as exc:
            main([*cmd, "--redact", "/event/email", "/"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "argument --redact: redaction path '/' names no value" in err
        assert not (tmp_path / "p.html").exists()


def test_the_usage_sparkline_counts_the_redacted_entries() -> None:
    rec = Recorder(contacts_machine())
    rec.send({"type": "SIGNUP", "email": "a@ex.test", "name": "A", "plan": "pro"})
    rec.send({"type": "@agent.usage", "usage": {"totalTokens": 987_654_321}})
    tt = asc.TimeTravel(contacts_machine(), rec.entries)

    def usage(page: str) -> Any:
        return json.loads(re.search(r'id="as-data">(.*?)</script>', page, re.S).group(1))["usage"]  # type: ignore[union-attr]

    assert usage(tt.to_html())[-1] == 987_654_321
    page = tt.to_html(redact=["/event/usage"])
    assert usage(page) is None and "987654321" not in page


def test_an_explanation_keeps_numbers_and_hashes_that_only_contain_a_redacted_value() -> None:
    """Whole tokens are replaced, not substrings: a redacted ``count`` of 1 leaves the epoch ms
    ``1767225600000`` and the hashes of a real mismatch explanation intact."""
    main_log, _ = _record([("a@x.org", "Al")])
    log = [dict(e) for e in main_log]
    log[2] = {**log[2], "verification": {"stateHash": "deadbeef"}}  # tampered: a real mismatch
    frame = asc.Timeline(contacts_machine(), log).at(2)
    assert frame.persisted is not None and frame.persisted["context"]["count"] == 1
    assert frame.explanation is not None and "recordedAt 1767225600000 ms" in frame.explanation
    assert frame.computed_hash is not None and "1" in frame.computed_hash
    assert Redaction(["/context/count"]).frame(frame).explanation == frame.explanation
    shown = Redaction(["/event/email", "/context/byEmail"]).frame(frame).explanation
    assert shown == frame.explanation.replace("remind:a@x.org", f"remind:{REDACTED}")


def test_an_explanation_quoting_a_redacted_value_in_repr_or_json_hides_it() -> None:
    """An engine error quotes the event's value with ``repr`` (backslash, lone surrogate
    escaped): that spelling is hidden too, in the frame and in the page."""
    from agentscope.engines.statechart import StatechartMachine

    def reject(context: Any, event: Any) -> Any:
        raise ValueError(f"rejected address {event['email']!r}")

    def machine(throw: bool) -> StatechartMachine:
        on = {"SIGNUP": reject if throw else {"target": "open"}}
        return StatechartMachine({"id": "signup", "initial": "open", "states": {"open": {"on": on}}})

    secret = "zq\\é\ud800@ex.test"
    rec = Recorder(machine(False))
    rec.send({"type": "SIGNUP", "email": secret})
    tt = asc.TimeTravel(machine(True), rec.entries)
    why = asc.Timeline(machine(True), rec.entries).at(1).explanation
    assert why is not None and repr(secret)[1:-1] in why
    shown = Redaction(["/event/email"]).frame(asc.Timeline(machine(True), rec.entries).at(1)).explanation
    assert shown is not None and shown.endswith(f"rejected address '{REDACTED}'")
    page = tt.to_html(redact=["/event/email"])
    _assert_hidden(page, {secret, repr(secret)[1:-1]}, "TimeTravel.to_html")


def _log_after_a_pause() -> list[Any]:
    """A real log whose SIGNUP at entry 3 is recorded 5 s after the previous entries, with two
    timers pending, and its hash tampered: a mismatch whose explanation spells this and the
    previous recordedAt in epoch ms."""
    rec = Recorder(contacts_machine(), execution_id="00000000-0000-4000-8000-000000000001")
    rec.send({"type": "SIGNUP", "email": "a@x.org", "name": "A", "plan": "pro"})
    rec.clock.advance(5000)
    rec.send({"type": "SIGNUP", "email": "b@x.org", "name": "B", "plan": "pro"})
    log = [dict(e) for e in rec.entries]
    log[3] = {**log[3], "verification": {"stateHash": "deadbeef"}}
    return log


def _mismatch_after_a_pause() -> Frame:
    frame = asc.Timeline(contacts_machine(), _log_after_a_pause()).at(3)
    assert frame.explanation is not None
    assert "recordedAt 1767225605000 ms and previous recordedAt 1767225600000 ms" in frame.explanation
    return frame


def test_a_redacted_timestamp_is_hidden_in_its_epoch_ms_spelling_too() -> None:
    """``/recordedAt`` hides the entry's ISO text and the epoch ms an explanation spells it in."""
    shown = Redaction(["/recordedAt"]).frame(_mismatch_after_a_pause()).explanation
    assert shown is not None and f"recordedAt {REDACTED} ms and previous" in shown
    assert "1767225605000" not in shown


def test_a_redacted_previous_timestamp_is_hidden_in_an_explanation() -> None:
    """The timer explanation also spells the previous entry's recordedAt (and the one where
    the timer appeared) in epoch ms: hidden too, in both players."""
    log = _log_after_a_pause()
    for page in (asc.TimeTravel(contacts_machine(), log).to_html(redact=["/recordedAt"]),
                 asc.ForkView(contacts_machine(), log, log[:4]).to_html(redact=["/recordedAt"])):
        assert "2026-01-01T00:00:0" not in page
        assert "1767225600000" not in page and "1767225605000" not in page
        assert f"previous recordedAt {REDACTED} ms" in page


@pytest.mark.parametrize("segment", ["²", "٣", "01", "-", "+1", " 1"])
def test_a_pointer_segment_that_is_not_an_array_index_selects_no_item(
    segment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RFC 6901 array indices are ASCII digits without a leading zero: ``²`` (a digit to
    ``str.isdigit``, not to ``int``) used to crash ``show --html``; these select no ticket, while
    ``/event/tickets/2/subject`` hides the third ticket's subject only (real triage log)."""
    log = FIXTURES / "g_triage.main.log.json"
    subjects = [t["subject"] for t in json.loads(log.read_text(encoding="utf-8"))[1]["event"]["tickets"]]
    page = tmp_path / "p.html"
    code = main(["show", str(log), "--limit", "0", "--html", str(page),
                 "--redact", f"/event/tickets/{segment}/subject", "/event/tickets/2/subject"])
    assert code == 0, capsys.readouterr()
    text = page.read_text(encoding="utf-8")
    assert [s in text for s in subjects] == [i != 2 for i in range(len(subjects))]
