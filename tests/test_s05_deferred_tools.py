"""s05's deferred tools: names up front, schemas on demand, a tool list that only grows.

Each test runs against s05 and every later chapter. It relies on the public names
DEFERRED_TOOLS, the agent's `loaded` (what this session has loaded), TOOLS, execute_tool and
agent_loop, and on what the scripted server received.
"""

import json

import pytest

from conftest import call_tool, chapter_params, load_chapter, result_text, run_agent, \
    sent_tool_results
from conftest import the_agent
from offline.server import reply, tool_use

DEFERRED = {"web_fetch", "enter_plan_mode", "exit_plan_mode"}


@pytest.fixture(params=chapter_params("s05"))
def mod(request):
    """The chapter, with a fresh session: nothing loaded, no plan mode (conftest puts
    the session state back after every test)."""
    return load_chapter(request.param)


def names(request: dict) -> list[str]:
    return [tool["name"] for tool in request["tools"]]


def loaded(output: str) -> list[dict]:
    """The tool definitions a tool_search result holds (one JSON object a line)."""
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


# --- the first request ------------------------------------------------------------------


def test_first_request_has_no_deferred_schema_but_names_them(mod, server, client):
    """The first request carries every tool that is not deferred, and only the
    names of the deferred ones, with the way to load them."""
    server.add(reply("Hello."))
    run_agent(mod, client, "hi")
    first = server.requests[0]
    assert set(mod.DEFERRED_TOOLS) == DEFERRED
    assert not DEFERRED & set(names(first))
    assert {"run_shell", "read_file", "write_file", "edit_file", "list_files", "grep_search",
            "tool_search", "skill"} <= set(names(first))
    text = json.dumps(first["tools"]) + json.dumps(first["system"])
    for name in DEFERRED:
        assert name in text  # named, so the model knows it exists ...
    assert '"url"' not in json.dumps(first["tools"])  # ... but web_fetch's schema is absent
    assert "tool_search" in text and "select:" in text


def test_stable_prefix_is_marked_for_prompt_caching(mod, server, client):
    """Exactly one cache_control mark, on the last always-loaded tool; TOOLS itself
    stays unmarked."""
    call_tool(mod, "tool_search", query="select:web_fetch")
    server.add(reply("Hello."))
    run_agent(mod, client, "hi")
    tools = server.requests[0]["tools"]
    marked = [i for i, tool in enumerate(tools) if "cache_control" in tool]
    assert marked == [len(tools) - 2]  # the last before the loaded web_fetch
    assert tools[marked[0]]["cache_control"] == {"type": "ephemeral"}
    assert tools[-1]["name"] == "web_fetch"
    assert not any("cache_control" in tool for tool in mod.TOOLS)


# --- tool_search --------------------------------------------------------------------------


def test_select_loads_exact_names_and_returns_full_definitions(mod):
    """select:a,b loads those tools; the result holds their whole definitions."""
    output, is_error = call_tool(mod, "tool_search", query="select:web_fetch,exit_plan_mode")
    assert not is_error
    found = loaded(output)
    assert [d["name"] for d in found] == ["web_fetch", "exit_plan_mode"]
    by_name = {tool["name"]: tool for tool in mod.TOOLS}
    for definition in found:
        assert definition["input_schema"] == by_name[definition["name"]]["input_schema"]
        assert definition["description"] == by_name[definition["name"]]["description"]
    assert the_agent(mod).loaded == ["web_fetch", "exit_plan_mode"]


def test_select_accepts_claude_code_names(mod):
    """select:WebFetch,EnterPlanMode loads web_fetch and enter_plan_mode."""
    output, is_error = call_tool(mod, "tool_search", query="select:WebFetch, EnterPlanMode")
    assert not is_error
    assert [d["name"] for d in loaded(output)] == ["web_fetch", "enter_plan_mode"]
    assert the_agent(mod).loaded == ["web_fetch", "enter_plan_mode"]


@pytest.mark.parametrize("query, first", [
    ("fetch a web page", "web_fetch"),
    ("url", "web_fetch"),
    ("WebFetch", "web_fetch"),
    ("plan mode", "enter_plan_mode"),
    ("present plan for approval", "exit_plan_mode"),
])
def test_keyword_search_ranks_names_and_descriptions(mod, query, first):
    """Any other query ranks deferred tools by keywords; the best one comes first."""
    output, is_error = call_tool(mod, "tool_search", query=query)
    assert not is_error
    found = [d["name"] for d in loaded(output)]
    assert found[0] == first
    assert set(found) <= DEFERRED
    assert the_agent(mod).loaded == found


def test_max_results_caps_what_is_loaded(mod):
    """max_results=1: only the best match is returned and loaded."""
    output, is_error = call_tool(mod, "tool_search", query="plan mode", max_results=1)
    assert not is_error and [d["name"] for d in loaded(output)] == ["enter_plan_mode"]
    assert the_agent(mod).loaded == ["enter_plan_mode"]


def test_no_match_lists_the_deferred_names(mod):
    """A query that matches nothing says so, names every deferred tool, loads nothing."""
    output, is_error = call_tool(mod, "tool_search", query="kubernetes")
    assert "No deferred tool matches" in output
    for name in DEFERRED:
        assert name in output
    assert the_agent(mod).loaded == []


@pytest.mark.parametrize("query", ["select:web_fetch,nope", "select:", "SELECT: ,"])
def test_select_of_an_unknown_name_is_an_error(mod, query):
    """select: with a name that is no tool, or with no name: an is_error result that
    lists the deferred tools; nothing loads."""
    output, is_error = call_tool(mod, "tool_search", query=query)
    assert is_error and "exit_plan_mode" in output
    assert "nope" in output or "none given" in output
    assert the_agent(mod).loaded == []


def test_loading_twice_does_not_duplicate(mod):
    """A tool loaded again is returned again but listed once."""
    call_tool(mod, "tool_search", query="select:web_fetch")
    call_tool(mod, "tool_search", query="select:web_fetch,WebFetch")
    assert the_agent(mod).loaded == ["web_fetch"]
    assert [t["name"] for t in mod.tools_for_request(the_agent(mod))].count("web_fetch") == 1


# --- calling a deferred tool ----------------------------------------------------------------


def test_calling_an_unloaded_deferred_tool_is_an_error(mod, server, client, workspace):
    """The model calls enter_plan_mode without loading it: an is_error result that
    says to load it with tool_search; the mode does not change."""
    server.add(reply(tool_use("enter_plan_mode")), reply("Understood."))
    run_agent(mod, client, "plan first")
    [result] = sent_tool_results(server.requests[1])
    assert result["is_error"] is True
    assert "tool_search" in result_text(result) and "select:enter_plan_mode" in result_text(result)
    assert the_agent(mod).permissions.mode is None


# --- end to end: activation persists, the list only grows -----------------------------------


def test_activation_shows_in_the_next_request_and_stays(mod, server, client, workspace):
    """Load exit_plan_mode, then web_fetch: each appears from the next request on, in
    the order loaded (not sorted), and each request's tools begin with the previous
    request's tools."""
    server.add(
        reply(tool_use("tool_search", {"query": "select:exit_plan_mode"})),
        reply(tool_use("read_file", {"file_path": "a.txt"})),
        reply(tool_use("tool_search", {"query": "fetch a url"})),
        reply("Done."),
    )
    (workspace / "a.txt").write_text("a\n")
    run_agent(mod, client, "load things")
    lists = [names(r) for r in server.requests]
    assert len(lists) == 4
    assert not DEFERRED & set(lists[0])
    assert lists[1][-1] == "exit_plan_mode" and lists[2] == lists[1]
    assert lists[3][-2:] == ["exit_plan_mode", "web_fetch"]
    for before, after in zip(server.requests, server.requests[1:]):
        assert after["tools"][:len(before["tools"])] == before["tools"]
    # and the next task of the same session still sends them
    server.add(reply("Still here."))
    run_agent(mod, client, "again")
    assert names(server.requests[-1])[-2:] == ["exit_plan_mode", "web_fetch"]


def test_a_loaded_deferred_tool_runs(mod, server, client, workspace):
    """After tool_search, the same call that failed goes through the whole pipeline."""
    server.add(
        reply(tool_use("tool_search", {"query": "select:EnterPlanMode"})),
        reply(tool_use("enter_plan_mode")),
        reply("Planning."),
    )
    run_agent(mod, client, "plan")
    [result] = sent_tool_results(server.requests[2])
    assert result["is_error"] is False and "Plan mode is on" in result_text(result)
