"""Checker for exercise s06 ex2 (core): at most two shell commands at once.

    pytest exercises/s06/test_ex2.py

It checks `wait_for_slot` and `release_slot` on their own, that run_call gives a slot
back even when the call is interrupted, and then, through the streaming loop, that a
batch of three `cat` commands never runs more than two at once. Which calls run at
the same time is shown by named pipes (exercises/s06/fifos.py), never by timing.
"""

import threading

from exercises.conftest import the_agent
from exercises.conftest import blocks, result_text, run_agent, tool_use_block
from exercises.s06.fifos import Fifos
from offline.server import reply, tool_use

SHELL = tool_use_block("run_shell", command="ls")
READ = tool_use_block("read_file", file_path="a.txt")


def test_the_limit_is_two(mod):
    """MAX_PARALLEL_SHELL is 2, and SHELL_SLOTS has that many slots."""
    assert mod.MAX_PARALLEL_SHELL == 2, f"MAX_PARALLEL_SHELL is {mod.MAX_PARALLEL_SHELL}, not 2"


def test_a_third_command_waits_for_a_slot(mod):
    """Two run_shell calls take both slots; a third waits until one is released.
    Other tools never wait."""
    got = [mod.wait_for_slot(SHELL, the_agent(mod)), mod.wait_for_slot(SHELL, the_agent(mod))]
    assert got == [True, True], (
        f"wait_for_slot should return True once it has taken a slot; it returned {got}")
    assert mod.wait_for_slot(READ, the_agent(mod)) is True, "a read_file call needs no slot: True at once"
    got = []
    third = threading.Thread(target=lambda: got.append(mod.wait_for_slot(SHELL, the_agent(mod))), daemon=True)
    third.start()
    third.join(0.5)
    assert third.is_alive(), (
        "a third run_shell call got a slot while two were taken: wait_for_slot should "
        "wait until one is free (SHELL_SLOTS is a semaphore with MAX_PARALLEL_SHELL slots).")
    mod.release_slot(SHELL)
    third.join(5)
    assert got == [True], "once a slot was released, the waiting call should get it"
    mod.release_slot(READ)  # releasing for a call that took none changes nothing
    assert not mod.SHELL_SLOTS.acquire(blocking=False), (
        "release_slot for a read_file call gave back a slot it never took")


def test_ctrl_c_while_waiting_means_not_run(mod):
    """All slots taken, the user presses Ctrl-C: the waiting call gives up with False."""
    for _ in range(mod.MAX_PARALLEL_SHELL):
        mod.wait_for_slot(SHELL, the_agent(mod))
    agent = the_agent(mod)
    cancel = agent.cancel  # what Ctrl-C sets (ToolRunner.interrupt)
    got = []
    waiter = threading.Thread(
        target=lambda: got.append(mod.wait_for_slot(SHELL, agent)), daemon=True)
    waiter.start()
    waiter.join(0.3)
    cancel.set()
    waiter.join(5)
    assert not waiter.is_alive(), (
        "after Ctrl-C (agent.cancel set) wait_for_slot kept waiting. Wait in short "
        "slices (acquire with a timeout) and check agent.cancel between them.")
    assert got == [False], f"after Ctrl-C wait_for_slot should return False, not {got}"


def test_an_interrupted_call_gives_its_slot_back(mod, monkeypatch):
    """run_call takes the slot and gives it back even if the call ends by Ctrl-C."""
    taken = []
    real_wait = mod.wait_for_slot
    monkeypatch.setattr(mod, "wait_for_slot",
                        lambda b, a: taken.append(b.name) or real_wait(b, a))

    def interrupted(block, agent):
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "execute_tool", interrupted)
    try:
        mod.run_call(tool_use_block("run_shell", command="sleep 30"), the_agent(mod))
    except KeyboardInterrupt:
        pass
    assert taken == ["run_shell"], "run_call should call wait_for_slot(block, agent) before the call runs"
    got = [mod.SHELL_SLOTS.acquire(blocking=False) for _ in range(mod.MAX_PARALLEL_SHELL)]
    assert all(got), (
        "a run_shell call ended by Ctrl-C kept its slot: release it in a `finally:`, or "
        "every Ctrl-C costs the session a slot for good.")


def test_a_batch_never_runs_three_commands_at_once(mod, server, client, workspace):
    """Three `cat` commands and a read in one streamed reply: two commands run at once,
    the third starts only when one of them has finished; results keep call order."""
    fifos = Fifos(workspace, ["a", "b", "c"])
    (workspace / "notes.txt").write_text("a note\n")
    seen = {}

    def feed():
        try:
            first = fifos.wait_running("abc", 2, 20)
            seen["first"] = first
            third = fifos.wait_running("abc", 3, 0.5)  # give a wrong third one time to start
            seen["at_once"] = len(third)
            fifos.release(first[0])  # one finishes: now the third may start
            seen["last"] = fifos.wait_running("abc", 3, 20)
        finally:
            fifos.close()

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    server.add(reply(*[tool_use("run_shell", {"command": f"cat {n}", "timeout": 30_000}, id=f"toolu_{n}")
                       for n in "abc"],
                     tool_use("read_file", {"file_path": "notes.txt"}, id="toolu_read"),
                     event_delay=0.005),
               reply("read all three"))
    _, final = run_agent(mod, client, "read the pipes")
    feeder.join(30)
    assert len(seen.get("first", [])) >= 2, (
        f"two commands should run side by side, but only {seen.get('first')} ever ran at once")
    assert seen["at_once"] == 2, (
        "all three `cat` commands ran at the same time: run_call should take a slot "
        "(wait_for_slot) before each run_shell call, so at most MAX_PARALLEL_SHELL run.")
    assert len(seen["last"]) == 3, "the third command never started after a slot came free"
    results = blocks(server.requests[1]["messages"][-1])
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b", "toolu_c", "toolu_read"], (
        f"results should keep call order: {[r['tool_use_id'] for r in results]}")
    assert all(f"content of {n}" in result_text(r) for n, r in zip("abc", results)), (
        f"each cat should return its pipe's line: {[result_text(r)[:60] for r in results]}")
    assert "a note" in result_text(results[3]), "the read_file call needs no slot and must run"
    assert final == "read all three"
