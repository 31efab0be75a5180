"""Follow on PostgreSQL with ``LISTEN``: a store opened with ``listen=CHANNEL`` ends a follower's
pause at the host's ``NOTIFY`` (a real server, another connection notifying), and the follower
then reads the appended rows; without a notification the pause runs out."""

from __future__ import annotations

import threading
from typing import Any

from agentscope.stores import open_store
from tests import pg_server

FOREVER = 600.0
"""A pause no test waits out: ``wait`` returning before it is the notification's doing."""


def _entries() -> list[tuple[str, int, str, str]]:
    return [r for r in pg_server.triage_rows() if r[0] == "main"]


def test_wait_returns_at_a_notify_and_times_out_without_one(postgres: Any) -> None:
    with open_store(postgres.url(query="listen=agent_events")) as store:
        assert store.wait(0.05) is False  # LISTENing now; nothing sent
        got: list[bool] = []
        waiter = threading.Thread(target=lambda: got.append(store.wait(FOREVER)))
        waiter.start()
        with postgres.admin() as conn:
            while waiter.is_alive():  # until the waiter hears one (sent before it listens: lost)
                conn.execute("NOTIFY agent_events, 'main'")
                waiter.join(0.2)
        assert got == [True]


def test_a_store_without_a_channel_just_pauses(postgres: Any) -> None:
    for source in (postgres.url(), str(pg_server.TRIAGE_STORE)):
        with open_store(source) as store:
            assert store.wait(0.01) is False


def test_a_follower_wakes_at_the_hosts_notify_and_reads_the_new_rows(postgres: Any) -> None:
    from agentscope.follow import follow

    rows = _entries()
    with postgres.admin() as conn:
        conn.execute("CREATE SCHEMA listen_live")
        pg_server.create_table(conn, "agent_event_log", schema="listen_live")
        pg_server.copy_rows(conn, "agent_event_log", rows[:10], schema="listen_live")
        try:
            follower = follow(None, postgres.url(query="schema=listen_live&listen=agent_events",
                                                 fragment="main"))
            assert len(follower.timeline) == 10

            def host() -> None:  # appends, then notifies until the follower has the entries
                with postgres.admin() as writer:
                    pg_server.copy_rows(writer, "agent_event_log", rows[10:25], schema="listen_live")
                    while len(follower.timeline) < 25:
                        writer.execute("NOTIFY agent_events, 'main'")
                        threading.Event().wait(0.2)

            t = threading.Thread(target=host)
            t.start()
            frames = follower.frames(interval=FOREVER, stop=lambda: len(follower.timeline) >= 25)
            indices = [f.index for f in frames]
            t.join()
            assert follower.store is not None
            follower.store.close()
            assert indices == list(range(25))
        finally:
            conn.execute("DROP SCHEMA listen_live CASCADE")
