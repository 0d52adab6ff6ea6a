"""s06: an agent in the background (background.py, issue 41): started in a thread of
its own, its id at once; its final answer told once in a <task-notification>, as
Claude Code shapes one; stopped by its cancel event, for good; commands' ids unchanged.

background.py is driven directly with a stand-in for the child's loop (a function of
the cancel event); real children through the loop: tests/test_s06_agent_modes.py.
"""

from __future__ import annotations

import threading

from s06_concurrency.background import (next_id, start_agent, stop_all, stop_task,
                                        tell_ended)

GUARD = 60.0  # seconds: a hang guard, never a claim about speed


def told(tasks: dict) -> list:
    messages, lines = [{"role": "user", "content": "go on"}], []
    tell_ended(tasks, messages, lines.append)
    content = messages[-1]["content"]
    return [] if isinstance(content, str) else [b["text"] for b in content[1:]], lines


def test_an_agent_answers_at_once_and_its_result_is_told_once():
    tasks, go = {"bash_1": {"how": "", "told": False}}, threading.Event()

    def child(cancel):
        assert go.wait(GUARD)
        return "The tests pass: 12 of 12."

    assert start_agent(tasks, child, "run the tests", "toolu_7") == "agent_1"
    assert tasks["agent_1"]["status"] == "running" and told(tasks) == ([], [])
    go.set()
    tasks["agent_1"]["thread"].join(GUARD)
    (notice,), lines = told(tasks)
    assert notice == ('<task-notification>\n<task-id>agent_1</task-id>\n<tool-use-id>'
                      'toolu_7</tool-use-id>\n<status>completed</status>\n<summary>'
                      'Agent "run the tests" finished</summary>\n<result>The tests '
                      'pass: 12 of 12.</result>\n</task-notification>')
    assert lines == ["  [background agent_1 finished: the model is told]"]
    assert told(tasks) == ([], [])  # once


def test_a_stopped_agent_stops_for_good_and_is_not_told():
    tasks, started = {}, threading.Event()

    def child(cancel):
        started.set()
        assert cancel.wait(GUARD)  # a loop that notices its cancel event
        return "too late"

    task_id = start_agent(tasks, child, "watch", "toolu_8")
    assert started.wait(GUARD)
    assert stop_task(tasks, task_id, kill=None) == "running"
    assert not tasks[task_id]["thread"].is_alive()
    assert tasks[task_id]["status"] == "killed" and tasks[task_id]["result"] == ""
    assert told(tasks) == ([], []) and stop_task(tasks, task_id, None) == "killed"


def test_a_failing_agent_is_told_with_its_error():
    tasks = {}

    def child(cancel):
        raise RuntimeError("the API said 529")

    tasks_id = start_agent(tasks, child, "flaky", "toolu_9")
    tasks[tasks_id]["thread"].join(GUARD)
    (notice,), _ = told(tasks)
    assert "<status>failed</status>" in notice
    assert "<result>RuntimeError: the API said 529</result>" in notice


def test_stop_all_leaves_no_agent_running_and_ids_count_by_kind():
    tasks = {}
    ids = [start_agent(tasks, lambda cancel: cancel.wait(GUARD) and "", f"a{i}", "t")
           for i in range(3)]
    assert ids == ["agent_1", "agent_2", "agent_3"]
    assert next_id(tasks, "bash") == "bash_1"  # a command's id is not pushed on
    stop_all(tasks, kill=None)
    assert all(not t["thread"].is_alive() and t["status"] == "killed"
               for t in tasks.values())
