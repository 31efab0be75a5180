"""The CLI's messages say what the docs promise (issue 26): ``threads`` on an unreadable store
says "Permission denied" as every command does, on an empty file it says the file is empty (not
"an empty database"), and a missing required field is "missing", never "got undefined"."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from agentscope.cli import main
from tests.conftest import FIXTURES, load_json

STORE = FIXTURES / "g_triage.sqlite"


@pytest.mark.parametrize("name", ["empty.json", "empty.sqlite"])
def test_threads_of_an_empty_file_says_it_is_empty(name: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / name).write_bytes(b"")
    assert main(["threads", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert err == f"agentscope: error: {tmp_path / name}: the file is empty: `threads` lists the threads " \
                  "of a §5.2 SQLite store\n"
    assert "empty database" not in err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads files whatever their mode")
def test_threads_of_an_unreadable_store_says_permission_denied(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "locked.sqlite"
    shutil.copyfile(STORE, store)
    store.chmod(0)
    for argv in (["threads", str(store)], ["show", f"{store}#main"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"agentscope: error: {store}: Permission denied\n"


@pytest.mark.parametrize(("field", "want"), [
    ("index", "entry.index is missing; expected a non-negative integer"),
    ("schemaVersion", "entry.schemaVersion is missing; expected 1"),
    ("recordedAt", "entry.recordedAt is missing; expected an RFC 3339 timestamp"),
])
def test_a_missing_field_is_missing_not_undefined(field: str, want: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    entries = load_json("a_counter.log.json")
    del entries[3][field]
    log = tmp_path / "log.json"
    log.write_text(json.dumps(entries))
    assert main(["show", str(log)]) == 2
    err = capsys.readouterr().err
    assert want in err and "entry 3" in err and "undefined" not in err


def test_the_fork_player_and_diff_agree_on_the_differing_context_paths(
        capsys: pytest.CaptureFixture[str]) -> None:
    """One definition of a differing context path: ForkView's count at the divergence equals the
    paths ``agentscope diff`` lists there (the triage fork: 9, where pairing array elements by
    index counted 21)."""
    pytest.importorskip("ipywidgets")
    from agentscope.examples import python_machines as pm
    from agentscope.widgets import ForkView

    py = "py:agentscope.examples.python_machines:triage_machine"
    assert main(["diff", f"{STORE}#main", f"{STORE}#fork", "--machine", py, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    listed = [c["path"] for c in data["state_changes"] if c["path"].startswith("/context/")]
    assert data["context_paths"] == listed and len(listed) == 9
    assert "/context/queue/0" in listed  # one insertion at the queue's head, not one per element
    m = pm.triage_machine()
    view = ForkView(m, load_json("g_triage.main.log.json"), load_json("g_triage.fork.log.json"))
    view.go(data["divergence"])
    assert "9 differing context path(s)" in view.summary_html(*view.frames())
    assert view.diff_paths() == listed
    # the static fork player shows the count computed here, and one diff row per path
    page = view.to_html()
    data = json.loads(re.search(r'<script type="application/json" id="as-data">(.*?)</script>', page, re.S)[1])
    at = data["divergence"]
    assert data["diffCounts"][at] == 9 and [r[0] for r in data["diffs"][at]] == listed
    assert main(["diff", f"{STORE}#main", f"{STORE}#fork", "--machine", py]) == 1
    assert f"state at entry {data['divergence']} differs in (9 differing context path(s)):" \
        in capsys.readouterr().out
