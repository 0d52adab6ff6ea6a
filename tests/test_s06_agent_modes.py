"""s06, issue 41, through the real loop: the task tools on the session's list (shared
with subagents), and every kind of child an `agent` call starts: a fork (its first
request repeats its parent's, and reads it from the prompt cache), a general-purpose
agent (one message), an agent type from .claude/agents (its prompt, tools, model and
project memory), a background agent (its answer as a <task-notification>, task_stop,
nothing left running). The real SDK against the scripted server; assertions on what
the server received, on the tool_results, on files on disk, on the terminal.
"""

from __future__ import annotations

import json

import pytest
from conftest import (
    assert_no_process,
    chapter_params,
    load_chapter,
    result_text,
    run_agent,
    sent_tool_results,
    the_agent,
    wait_until,
    write_settings,
)

from offline.server import reply, routed, tool_use


@pytest.fixture(params=chapter_params("s06"))
def mod(request):
    return load_chapter(request.param)


def results_by_id(request: dict) -> dict:
    """{tool_use_id: (text, is_error)} of the tool_results a request carries."""
    return {r["tool_use_id"]: (result_text(r), bool(r.get("is_error")))
            for r in sent_tool_results(request)}


def recorded_usage(server) -> list:
    """The usage the server reports, one a request, in order (its cache's figures)."""
    usages, real = [], server.usage

    def record(body):
        usages.append(real(body))
        return usages[-1]
    server.usage = record
    return usages


def agent_call(description, prompt, id, **kind):
    return tool_use("agent", {"description": description, "prompt": prompt, **kind},
                    id=id)


# --- the task list ----------------------------------------------------------------


def update(id, task, **fields):
    return tool_use("task_update", {"taskId": task, **fields}, id=id)


def test_the_task_state_machine_and_its_errors(mod, server, client, workspace):
    """Moves the machine allows answer plainly; an unknown status or id, a move it
    does not allow, a cycle, a blocked start: is_error results that say why."""
    server.add(
        reply(*(tool_use("task_create", {"subject": s, "description": s.lower()},
                         id=f"c{n}") for n, s in enumerate(("Fix", "Test", "Ship"), 1))),
        reply(update("u1", "1", status="in_progress"),
              update("u2", "2", status="bogus"),
              update("u3", "99", status="completed"),
              update("u4", "3", status="completed"),
              update("u5", "2", addBlockedBy=["1"]),
              update("u6", "1", addBlockedBy=["2"]),
              update("u7", "2", status="in_progress"),
              tool_use("task_get", {"taskId": "2"}, id="g"),
              tool_use("task_list", {}, id="l")),
        reply("planned"))
    run_agent(mod, client, "plan it")
    created = results_by_id(server.requests[1])
    assert created == {f"c{n}": (f"Task #{n} created successfully: {s}", False)
                       for n, s in enumerate(("Fix", "Test", "Ship"), 1)}
    got = results_by_id(server.requests[2])
    assert got["u1"] == ("Updated task #1: owner, status.", False)
    assert got["u2"][1] and "'bogus' is not one of: pending, in_progress" in got["u2"][0]
    assert got["u3"][1] and "no task #99; the tasks are: #1, #2, #3" in got["u3"][0]
    assert got["u4"][1] and "#3 is pending: it can move to in_progress or deleted, " \
        "not to completed" in got["u4"][0]
    assert got["u5"] == ("Updated task #2: blockedBy.", False)
    assert got["u6"][1] and "#2 cannot block #1" in got["u6"][0]
    assert got["u7"][1] and "task #2 is blocked by #1" in got["u7"][0]
    assert got["g"] == (("Task #2: Test\nStatus: pending\nDescription: test\n"
                        "Blocked by: #1"), False)
    assert got["l"] == (("#1 [in_progress] Fix (main)\n#2 [pending] Test "
                        "[blocked by #1]\n#3 [pending] Ship"), False)


def test_a_subagent_works_on_the_same_list(mod, server, client, workspace):
    """The parent plans; a general-purpose agent claims #1 (it becomes the owner)
    and adds #2; the parent's task_list shows both: one list for the session."""
    server.add(
        reply(tool_use("task_create", {"subject": "Check the tests",
                                       "description": "run them"}, id="c1")),
        reply(agent_call("helper", "Take task 1.", "a1",
                         subagent_type="general-purpose")),
        reply(update("h1", "1", status="in_progress"),
              tool_use("task_create", {"subject": "Fix the report",
                                       "description": "it is wrong"}, id="h2")),
        reply("Took #1, found #2."),
        reply(tool_use("task_list", {}, id="l")),
        reply("done"))
    run_agent(mod, client, "plan and hand out")
    child = results_by_id(server.requests[3])
    assert child == {"h1": ("Updated task #1: owner, status.", False),
                     "h2": ("Task #2 created successfully: Fix the report", False)}
    assert results_by_id(server.requests[5])["l"] == (
        "#1 [in_progress] Check the tests (helper)\n#2 [pending] Fix the report", False)


# --- a fork -------------------------------------------------------------------------


def test_a_fork_repeats_its_parents_request_and_reads_it_from_the_cache(
        mod, server, client, workspace):
    """The fork's first request: the parent's model, system, tools and messages as
    sent, byte for byte, then the parent's reply whole, each other call answered by
    a placeholder, and the directive. The server's cache reads the parent's whole
    prompt back. The fork cannot fork again (is_error)."""
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    usages = recorded_usage(server)
    server.add(
        reply(tool_use("read_file", {"file_path": "a.txt"}, id="r1")),
        reply("Two at once.", tool_use("read_file", {"file_path": "b.txt"}, id="r2"),
              agent_call("fix a", "Fix a.txt.", "f1")),
        reply(agent_call("deeper", "Split it.", "f2")),    # the fork tries to fork
        reply("Fixed a.txt."),                             # the fork's answer
        reply("done"))
    run_agent(mod, client, "look at a, then fork")
    parent, fork, fork2, last = server.requests[1:]
    for key in ("model", "system", "tools", "max_tokens", "cache_control"):
        assert json.dumps(fork[key]) == json.dumps(parent[key])
    n = len(parent["messages"])
    assert json.dumps(fork["messages"][:n]) == json.dumps(parent["messages"])
    assert [b.get("id") for b in fork["messages"][n]["content"]] == [None, "r2", "f1"]
    own, other = results_by_id(fork)["f1"], results_by_id(fork)["r2"]
    assert "you are that fork" in own[0] and "runs this call itself" in other[0]
    directive = fork["messages"][n + 1]["content"][-1]["text"]
    assert directive.startswith("<fork-directive>")
    assert directive.endswith("Your directive: Fix a.txt.")
    whole = sum(usages[1][k] for k in ("input_tokens", "cache_read_input_tokens",
                                      "cache_creation_input_tokens"))
    assert usages[2]["cache_read_input_tokens"] == whole  # the parent's whole prompt
    text, is_error = results_by_id(fork2)["f2"]
    assert is_error and "a fork cannot start another fork" in text
    assert results_by_id(last)["f1"] == ("Fixed a.txt.", False)
    assert results_by_id(last)["r2"][0].endswith("beta")  # the parent ran its own


def test_fork_is_the_same_as_no_subagent_type(mod, server, client, workspace):
    server.add(reply(agent_call("f", "Say hi.", "f1", subagent_type="fork")),
               reply("hi"), reply("done"))
    run_agent(mod, client, "fork by name")
    assert server.requests[1]["messages"][0]["content"] == "fork by name"
    assert results_by_id(server.requests[2])["f1"] == ("hi", False)


# --- general-purpose, an agent type ---------------------------------------------


def test_a_general_purpose_agent_has_one_message(mod, server, client, workspace):
    server.add(reply("Some context first.",
                     agent_call("fresh", "Count to three.", "g1",
                                subagent_type="general-purpose")),
               reply("1 2 3"), reply("done"))
    run_agent(mod, client, "a long conversation")
    assert server.requests[1]["messages"] == [{"role": "user",
                                               "content": "Count to three."}]
    assert results_by_id(server.requests[2])["g1"] == ("1 2 3", False)


def test_an_unknown_type_names_those_there_are(mod, server, client, workspace):
    server.add(reply(agent_call("x", "Go.", "x1", subagent_type="nosuch")),
               reply("done"))
    run_agent(mod, client, "go")
    text, is_error = results_by_id(server.requests[1])["x1"]
    assert is_error and "Agent type 'nosuch' not found. Available: " \
        "general-purpose, fork." in text


REVIEWER = """---
name: reviewer
description: Reviews code for bugs.
tools: Read, Grep
model: haiku
memory: project
---
You review code. Say what is wrong, with the line.
"""


def test_an_agent_type_with_its_prompt_tools_model_and_memory(
        mod, server, client, workspace):
    """`.claude/agents/reviewer.md`: its body and MEMORY.md's lines are its system
    prompt, its tools Read and Grep (and Write, Edit for its memory), its model
    haiku's; it writes its memory folder unasked, and `.claude/settings.json` is
    still asked (no terminal: refused)."""
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    memory = workspace / ".claude" / "agent-memory" / "reviewer"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- house style: tabs\n- report.py is old\n"
                                      "- tests: pytest -q\n")
    notes = ".claude/agent-memory/reviewer/notes.md"
    server.add(
        reply(agent_call("review", "Review report.py.", "t1", subagent_type="reviewer")),
        reply(tool_use("write_file", {"file_path": notes, "content": "seen\n"}, id="w1"),
              tool_use("write_file", {"file_path": ".claude/settings.json",
                                      "content": "{}\n"}, id="w2")),
        reply("Reviewed."), reply("done"))
    run_agent(mod, client, "review it")
    first = server.requests[1]
    assert first["model"] == "claude-haiku-5-5"
    assert [t["name"] for t in first["tools"]] == ["read_file", "grep_search",
                                                    "write_file", "edit_file"]
    system = first["system"] if isinstance(first["system"], str) else \
        "".join(b["text"] for b in first["system"])
    assert system.startswith("You review code. Say what is wrong, with the line.")
    assert "- house style: tabs\n- report.py is old\n- tests: pytest -q" in system
    assert first["messages"] == [{"role": "user", "content": "Review report.py."}]
    wrote = results_by_id(server.requests[2])
    assert not wrote["w1"][1] and (workspace / notes).read_text() == "seen\n"
    assert wrote["w2"][1] and "Permission denied" in wrote["w2"][0]
    assert not (workspace / ".claude" / "settings.json").exists()


def test_the_memory_folder_is_the_types_alone(mod, server, client, workspace):
    """The main agent (no memory folder) writing the same path is asked: refused."""
    (workspace / ".claude" / "agent-memory" / "reviewer").mkdir(parents=True)
    notes = ".claude/agent-memory/reviewer/notes.md"
    server.add(reply(tool_use("write_file", {"file_path": notes, "content": "x"},
                              id="w")), reply("done"))
    run_agent(mod, client, "write it")
    text, is_error = results_by_id(server.requests[1])["w"]
    assert is_error and "Permission denied" in text
    assert not (workspace / notes).exists()


# --- in the background --------------------------------------------------------------


def test_a_background_agent_answers_later_in_a_task_notification(
        mod, server, client, workspace):
    """The call answers at once with an id; the child's final answer reaches the
    main agent's next request as a <task-notification>."""
    agent = the_agent(mod, client)

    def once_it_ended(request):
        wait_until(lambda: agent.tasks.get("agent_1", {}).get("status") != "running"
                   and "agent_1" in agent.tasks)
        return reply(tool_use("task_list", {}, id="l"))
    server.add(*routed({
        "go": [reply(agent_call("count", "Count the files.", "b1",
                                subagent_type="general-purpose",
                                run_in_background=True)),
               once_it_ended, reply("done")],
        "Count the files.": [reply("Three files.")]}))
    run_agent(mod, client, "go")
    main = [r for r in server.requests if r["messages"][0]["content"] == "go"]
    text, is_error = results_by_id(main[1])["b1"]
    assert not is_error and text.startswith(
        "Agent running in background with ID: agent_1.")
    told = [b["text"] for b in main[2]["messages"][-1]["content"]
            if b.get("type") == "text"]
    assert told == [('<task-notification>\n<task-id>agent_1</task-id>\n<tool-use-id>'
                    'b1</tool-use-id>\n<status>completed</status>\n<summary>Agent '
                    '"count" finished</summary>\n<result>Three files.</result>\n'
                    '</task-notification>')]


def background_sleeper(server, agent, seconds: int, then: list):
    """A background agent whose one call is `sleep <seconds>` (a marker for pgrep);
    the main agent's second turn waits until that sleep runs, then `then`."""
    def once_it_sleeps(request):
        wait_until(lambda: any(server_saw(server, "Sleep.")) and agent.tasks.get(
            "agent_1", {}).get("procs"))
        return then[0]
    return routed({
        "go": [reply(agent_call("sleeper", "Sleep.", "b1",
                                subagent_type="general-purpose",
                                run_in_background=True)),
               once_it_sleeps, *then[1:]],
        "Sleep.": [reply(tool_use("run_shell", {"command": f"sleep {seconds}"})),
                   reply("Slept.")]})


def server_saw(server, first: str):
    return (r for r in server.requests if r["messages"][0]["content"] == first)


def test_task_stop_stops_a_background_agent_and_its_command(
        mod, server, client, workspace):
    write_settings(workspace, {"allow": ["Bash"]})
    agent = the_agent(mod, client)
    server.add(*background_sleeper(server, agent, 2870, [
        reply(tool_use("task_stop", {"task_id": "agent_1"}, id="s")), reply("done")]))
    run_agent(mod, client, "go")
    # the stop waited for the agent's thread: gone now, as is its command (a sleep
    # far longer than the guard, so that waiting it out cannot pass)
    assert not agent.tasks["agent_1"]["thread"].is_alive()
    assert_no_process("sleep 2870")
    main = [r for r in server_saw(server, "go")]
    text, is_error = results_by_id(main[2])["s"]
    assert not is_error and text.startswith("Stopped task agent_1 (sleeper)")
    assert agent.tasks["agent_1"]["status"] == "killed"
    assert "<task-notification>" not in json.dumps(main[2]["messages"][-1])


def test_nothing_outlives_the_agent(mod, server, client, workspace):
    """The main agent ends while its background agent still waits on a command:
    closing the agent stops both."""
    write_settings(workspace, {"allow": ["Bash"]})
    agent = the_agent(mod, client)
    server.add(*background_sleeper(server, agent, 2830, [reply("leaving")]))
    run_agent(mod, client, "go")
    agent.close()
    assert not agent.tasks["agent_1"]["thread"].is_alive()
    assert_no_process("sleep 2830")


# --- what the terminal shows ----------------------------------------------------------


def test_an_agent_line_comes_before_its_subagents_work(mod, server, client, workspace,
                                                       capsys):
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    fresh = {"subagent_type": "general-purpose"}
    server.add(reply(agent_call("read a", "Read a.", "a", **fresh),
                     agent_call("read b", "Read b.", "b", **fresh)),
               *routed({"Read a.": [reply(tool_use("read_file", {"file_path": "a.txt"})),
                                    reply("A.")],
                        "Read b.": [reply(tool_use("read_file", {"file_path": "b.txt"})),
                                    reply("B.")]}),
               reply("done"))
    run_agent(mod, client, "read both")
    lines = capsys.readouterr().out.splitlines()
    for name, answer in (("read a", "A."), ("read b", "B.")):
        start = next(i for i, line in enumerate(lines)
                     if line.startswith(f"> agent(description='{name}'"))
        work = [i for i, line in enumerate(lines) if line.startswith(f"[{name}] ")]
        assert work and start < min(work)
        assert any(line.strip() == answer for line in lines[max(work) + 1:])


def test_two_agent_calls_side_by_side_show_each_decision_under_its_call(
        mod, server, client, trusted_folder, capsys):
    """Two agent calls in one batch, each decided slowly (a PreToolUse hook sleeps):
    each call's line and its decision show together, not the other's call line
    between them (s06's demo once printed a decision under the wrong call)."""
    workspace = trusted_folder
    write_settings(workspace, {})
    settings = json.loads((workspace / ".claude" / "settings.json").read_text())
    settings["hooks"] = {"PreToolUse": [{"matcher": "Agent", "hooks": [
        {"type": "command", "command": "sleep 0.3"}]}]}
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    fresh = {"subagent_type": "general-purpose"}
    server.add(reply(agent_call("say a", "Say A.", "a", **fresh),
                     agent_call("say b", "Say B.", "b", **fresh)),
               *routed({"Say A.": [reply("A.")], "Say B.": [reply("B.")]}),
               reply("done"))
    run_agent(mod, client, "both")
    lines = capsys.readouterr().out.splitlines()
    for name in ("say a", "say b"):
        start = next(i for i, line in enumerate(lines)
                     if line.startswith(f"> agent(description='{name}'"))
        assert lines[start + 1].startswith("  [allow] "), lines[start:start + 4]


def test_a_fork_of_an_agent_type_repeats_that_types_request(
        mod, server, client, workspace):
    """A fork takes its parent's system prompt and model as sent, not the main
    agent's: here its parent is an agent type (its own prompt, haiku)."""
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "lead.md").write_text(
        "---\nname: lead\ndescription: Leads.\nmodel: haiku\n---\nYou lead a review.\n")
    server.add(reply(agent_call("lead it", "Lead.", "t1", subagent_type="lead")),
               reply(agent_call("part", "Do a part.", "f1")),   # the type forks
               reply("Part done."), reply("Led."), reply("done"))
    run_agent(mod, client, "go")
    lead, fork = server.requests[1], server.requests[2]
    assert lead["system"] == "You lead a review." and fork["system"] == lead["system"]
    assert fork["model"] == lead["model"] == "claude-haiku-5-5"
    assert json.dumps(fork["tools"]) == json.dumps(lead["tools"])
    assert fork["messages"][:1] == lead["messages"]
    assert results_by_id(server.requests[3])["f1"] == ("Part done.", False)
