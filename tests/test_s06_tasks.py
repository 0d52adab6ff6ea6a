"""s06: the task list (tasks.py): its states and moves, owners, what blocks what, every
refusal with its reason, a refused update that changes nothing, one lock for many
threads, and the verification nudge.

tasks.py is driven directly: it holds no request. Its tools (task_create ...) through
the real loop: tests/test_s06_agent_modes.py.
"""

from __future__ import annotations

import itertools
import sys
import threading

import pytest

from s06_concurrency.tasks import MOVES, STATUSES, TaskError, TaskList


def three() -> TaskList:
    tasks = TaskList()
    for name in "ABC":
        tasks.create(name, f"do {name}")
    return tasks


def refused(call, *words) -> str:
    with pytest.raises(TaskError) as caught:
        call()
    for word in words:
        assert word in str(caught.value)
    return str(caught.value)


def test_create_answers_small_ids_as_claude_code_does():
    tasks = TaskList()
    assert tasks.create("Write the parser", "in parse.py") == \
        "Task #1 created successfully: Write the parser"
    assert tasks.create("Test it", "") == "Task #2 created successfully: Test it"
    assert tasks.list() == "#1 [pending] Write the parser\n#2 [pending] Test it"
    assert refused(lambda: tasks.create("  ", "x"), "subject is empty")


@pytest.mark.parametrize("start, goal", list(itertools.product(STATUSES[:3], STATUSES)))
def test_every_move_is_allowed_exactly_when_the_machine_has_it(start, goal):
    """From each state to each other: allowed by MOVES, or refused naming the moves
    there are; the same status is no move at all."""
    tasks = TaskList()
    tasks.create("A", "a")
    path = {"pending": [], "in_progress": ["in_progress"],
            "completed": ["in_progress", "completed"]}[start]
    for status in path:
        tasks.update("1", by="main", status=status)
    if goal == start:
        assert "unchanged" in tasks.update("1", by="main", status=goal)
    elif goal in MOVES[start]:
        assert "status" in tasks.update("1", by="main", status=goal)
        if goal != "deleted":
            assert tasks.snapshot()["1"]["status"] == goal
        else:
            assert tasks.snapshot() == {}
    else:
        words = refused(lambda: tasks.update("1", by="main", status=goal),
                        f"is {start}", f"not to {goal}")
        assert all(move in words for move in MOVES[start])


def test_bad_input_is_refused_with_the_reason():
    tasks = three()
    refused(lambda: tasks.update("1", by="main", status="done"),
            "'done' is not one of", "in_progress")
    refused(lambda: tasks.update("9", by="main", status="completed"),
            "no task #9", "#1, #2, #3")
    refused(lambda: tasks.get("abc"), "no task #abc")
    refused(lambda: tasks.get(1), 'ids are text, like "1"')  # as the schema says
    refused(lambda: tasks.update("2", by="main", add_blocks=[1]), "ids are text")
    refused(lambda: tasks.update("1", by="main", add_blocks=["9"]), "no task #9")
    refused(lambda: tasks.update("1", by="main", add_blocked_by=["1"]),
            "cannot block itself")
    tasks.update("3", by="main", status="deleted")
    refused(lambda: tasks.get("3"), "#3 was deleted")
    assert tasks.create("D", "d").startswith("Task #4 ")  # ids are never reused


def test_a_cycle_is_refused_directly_and_through_other_tasks():
    tasks = three()
    tasks.update("2", by="main", add_blocked_by=["1"])  # 1 blocks 2
    tasks.update("3", by="main", add_blocked_by=["2"])  # 2 blocks 3
    refused(lambda: tasks.update("1", by="main", add_blocked_by=["2"]),
            "#2 cannot block #1", "cycle")
    refused(lambda: tasks.update("3", by="main", add_blocks=["1"]),
            "#3 cannot block #1")
    # two edges in one call that close a cycle between them
    fresh = three()
    refused(lambda: fresh.update("1", by="main", add_blocks=["2"],
                                 add_blocked_by=["2"]), "cycle")


def test_a_refused_update_changes_nothing():
    """Checked whole first: a good subject beside a bad edge is not applied."""
    tasks = three()
    tasks.update("2", by="main", add_blocked_by=["1"])
    before = tasks.snapshot()
    refused(lambda: tasks.update("1", by="main", subject="renamed",
                                 add_blocks=["3"], add_blocked_by=["2"]), "cycle")
    refused(lambda: tasks.update("2", by="main", subject="renamed",
                                 status="in_progress"), "blocked by #1")
    assert tasks.snapshot() == before


def test_both_ends_of_an_edge_and_blockers_that_are_done():
    tasks = three()
    assert tasks.update("1", by="main", add_blocks=["2", "2"]) == \
        "Updated task #1: blocks."
    assert tasks.snapshot()["2"]["blockedBy"] == ["1"]
    assert "Blocked by: #1" in tasks.get("2")
    assert "#2 [pending] B [blocked by #1]" in tasks.list()
    refused(lambda: tasks.update("2", by="main", status="in_progress"),
            "blocked by #1", "finish")
    tasks.update("1", by="main", status="in_progress")
    tasks.update("1", by="main", status="completed")
    assert "Blocked by" not in tasks.get("2")  # a completed blocker waits for nothing
    assert "owner" in tasks.update("2", by="main", status="in_progress")
    tasks.update("1", by="main", status="deleted")
    assert tasks.snapshot()["2"]["blockedBy"] == []  # gone from both ends
    tasks.update("3", by="main", status="deleted", add_blocks=["2"])  # in one call
    assert list(tasks.snapshot()) == ["2"] and tasks.snapshot()["2"]["blockedBy"] == []


def test_whoever_starts_a_task_owns_it_and_no_one_else_may_claim_it():
    tasks = three()
    tasks.update("1", by="tester", status="in_progress")
    assert "Owner: tester" in tasks.get("1") and "(tester)" in tasks.list()
    refused(lambda: tasks.update("1", by="main", status="in_progress"),
            "belongs to tester")
    tasks.update("1", by="tester", status="pending")  # given back: anyone may take it
    assert tasks.snapshot()["1"]["owner"] == ""
    tasks.update("1", by="main", status="in_progress")
    tasks.update("2", by="main", owner="tester")  # assigned before it starts
    refused(lambda: tasks.update("2", by="main", status="in_progress"),
            "belongs to tester")
    assert "status" in tasks.update("2", by="tester", status="in_progress")


def test_the_verification_nudge_comes_when_all_is_done_and_nothing_verified():
    tasks = three()
    for task_id in "12":
        tasks.update(task_id, by="main", status="in_progress")
        assert "verif" not in tasks.update(task_id, by="main", status="completed")
    tasks.update("3", by="main", status="in_progress")
    last = tasks.update("3", by="main", status="completed")
    assert "All 3 tasks are completed" in last and "verify it" in last
    checked = three()
    checked.create("Run the tests", "python -m pytest")
    for task_id in "1234":
        checked.update(task_id, by="main", status="in_progress")
        assert "verif" not in checked.update(task_id, by="main", status="completed")


def test_many_threads_see_whole_updates_only():
    """Eight agents create at once, then all try to claim every task: ids are unique,
    and each task has exactly one owner, the one whose claim was answered."""
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        tasks, agents = TaskList(), [f"agent{i}" for i in range(8)]
        start, claims = threading.Barrier(len(agents)), {}

        def work(name: str) -> None:
            start.wait()
            for _ in range(25):
                tasks.create(f"by {name}", "")
            start.wait()
            for task_id in map(str, range(1, 201)):
                try:
                    tasks.update(task_id, by=name, status="in_progress")
                    claims.setdefault(task_id, []).append(name)
                except TaskError:
                    pass

        threads = [threading.Thread(target=work, args=(a,)) for a in agents]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(0.005)
    final = tasks.snapshot()
    assert sorted(final, key=int) == [str(i) for i in range(1, 201)]
    assert all(len(claims[i]) == 1 and final[i]["owner"] == claims[i][0]
               for i in final)
