"""s05's MCP servers, through the real loop: the stockroom server (offline/mcp_server.py)
configured in the workspace's `.mcp.json`, started by the chapter with the official SDK.

Each test runs against s05 and every later chapter. The server logs its pid and every
call that reaches it to a file outside the workspace: the tests read what it saw, and
check that no server process is left when the agent is done.
"""

import json
import os
import sys
import time

import pytest
from conftest import (
    ROOT,
    call_tool,
    chapter_params,
    load_chapter,
    result_text,
    run_agent,
    sent_tool_results,
)

from offline.server import reply, tool_use

SERVER = ROOT / "offline" / "mcp_server.py"
FIND = "mcp__stockroom__find_supplier"
ORDER = "mcp__stockroom__place_order"


@pytest.fixture(params=chapter_params("s05"))
def mod(request):
    return load_chapter(request.param)


def configure(workspace, settings: dict, servers: dict | None = None) -> None:
    """.mcp.json with the stockroom server (unless `servers` says otherwise), and
    .claude/settings.json with `settings`."""
    log = workspace.parent / "stockroom.log"
    servers = servers or {"stockroom": {
        "command": sys.executable, "args": [str(SERVER)],
        "env": {"STOCKROOM_LOG": str(log), "STOCKROOM_TEST_TOOLS": "1"}}}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))


def events(workspace) -> list[dict]:
    log = workspace.parent / "stockroom.log"
    return [json.loads(line) for line in log.read_text().splitlines()] \
        if log.exists() else []


def calls_seen(workspace) -> list[str]:
    return [e["tool"] for e in events(workspace) if "tool" in e]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] != "Z" \
        if os.path.exists(f"/proc/{pid}") else True


@pytest.fixture
def connected(mod, workspace, capsys):
    """Connect with `connect(settings)`; after the test the servers are stopped and
    none of their processes is left."""
    def connect(settings: dict, servers: dict | None = None) -> str:
        configure(workspace, settings, servers)
        mod.connect_mcp_servers()
        return capsys.readouterr().out
    yield connect
    mod.disconnect_mcp_servers()
    pids = [e["started"] for e in events(workspace) if "started" in e]
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if alive(p)], "an MCP server outlived the agent"
    assert not [t for t in mod.TOOLS if t["name"].startswith("mcp__")]


APPROVED = {"enabledMcpjsonServers": ["stockroom"]}


def test_first_request_names_the_mcp_tools_but_carries_no_schema(mod, connected,
                                                                 server, client):
    """With the server connected, the first request's tools are the built-ins only
    (cache mark unchanged); the system prompt names every MCP tool, sorted."""
    out = connected(APPROVED)
    assert "stockroom: 27 tools, deferred" in out
    server.add(reply("Hello."))
    run_agent(mod, client, "hi")
    first = server.requests[0]
    assert not [t for t in first["tools"] if t["name"].startswith("mcp__")]
    assert "cache_control" in first["tools"][-1]
    named = [n for n in json.dumps(first["system"]).replace('"', " ").replace(
        ",", " ").split() if n.startswith("mcp__")]
    assert FIND in named and ORDER in named and named == sorted(named)
    pool = [t["name"] for t in mod.TOOLS]
    assert pool[-len(named):] == named  # built-ins first, the MCP tools after, sorted


def test_tool_search_loads_an_mcp_tool_and_its_call_reaches_the_server(
        mod, connected, workspace, server, client):
    """tool_search finds find_supplier by a keyword; its schema joins the request;
    the call returns the server's answer."""
    connected(APPROVED)
    server.add(reply(tool_use("tool_search", {"query": "supplier reorder item",
                                              "max_results": 1})),
               reply(tool_use(FIND, {"item_name": "hinges"})), reply("Fixings Ltd."))
    run_agent(mod, client, "who supplies hinges?")
    assert FIND in result_text(sent_tool_results(server.requests[1])[0])
    assert server.requests[2]["tools"][-1]["name"] == FIND
    answer = sent_tool_results(server.requests[2])[0]
    assert not answer.get("is_error")
    assert "Fixings Ltd" in result_text(answer)
    assert calls_seen(workspace) == ["find_supplier"]


def test_select_form_loads_by_exact_name(mod, connected):
    """Claude Code's 'select:' form loads an MCP tool by its full name."""
    connected(APPROVED)
    output, is_error = call_tool(mod, "tool_search", query=f"select:{ORDER}")
    assert not is_error and ORDER in output
    assert mod.SESSION["loaded"] == [ORDER]


@pytest.mark.parametrize("rule", [ORDER, "mcp__stockroom", "mcp__stockroom__*"])
def test_deny_rules_stop_calls_before_the_server_sees_them(mod, connected, workspace,
                                                           rule):
    """A deny rule naming the tool, or the whole server, refuses the call: the
    server never hears of it."""
    connected(APPROVED | {"permissions": {"deny": [rule],
                                           "defaultMode": "bypassPermissions"}})
    call_tool(mod, "tool_search", query=f"select:{ORDER}")
    output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=10)
    assert is_error and "deny rule" in output
    assert "place_order" not in calls_seen(workspace)


def test_a_tool_without_read_only_hint_asks_and_runs_with_an_allow_rule(
        mod, connected, workspace):
    """place_order does not say it only reads: in default mode it asks (no terminal:
    no); with an allow rule it runs. find_supplier says readOnlyHint: it runs."""
    connected(APPROVED)
    call_tool(mod, "tool_search", query=f"select:{ORDER},{FIND}")
    output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=10)
    assert is_error and "no one can answer" in output
    assert not call_tool(mod, FIND, item_name="bolts")[1]
    (workspace / ".claude" / "settings.json").write_text(json.dumps(
        APPROVED | {"permissions": {"allow": [ORDER]}}))
    output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=10)
    assert not is_error and "ordered from Fixings Ltd" in output
    assert calls_seen(workspace) == ["find_supplier", "place_order"]


def test_a_hook_matching_mcp_sees_the_call(mod, connected, workspace):
    """A PreToolUse hook with the matcher `mcp__.*` receives the MCP name and input."""
    seen = workspace.parent / "hook.json"
    hook = {"type": "command",
            "command": f"{sys.executable} -c \"import sys; open({str(seen)!r}, 'w')"
                       ".write(sys.stdin.read())\""}
    connected(APPROVED | {"hooks": {"PreToolUse": [{"matcher": "mcp__.*",
                                                     "hooks": [hook]}]}})
    call_tool(mod, "tool_search", query=f"select:{FIND}")
    assert not call_tool(mod, FIND, item_name="hinges")[1]
    payload = json.loads(seen.read_text())
    assert payload["tool_name"] == FIND
    assert payload["tool_input"] == {"item_name": "hinges"}


def test_error_result_crash_and_timeout_are_data(mod, connected, workspace, server,
                                                 client):
    """An isError result, a call that times out and a server that dies mid-call each
    give an is_error tool_result; the agent finishes its task."""
    connected(APPROVED)
    mod_timeout, mod.MCP_CALL_TIMEOUT = mod.MCP_CALL_TIMEOUT, 1
    try:
        names = [f"mcp__stockroom__{n}" for n in ("fail", "sleep", "crash")]
        call_tool(mod, "tool_search", query=f"select:{FIND}")
        call_tool(mod, "tool_search", query="select:" + ",".join(names))
        server.add(reply(tool_use(names[0], {})), reply(tool_use(names[1],
                                                                 {"seconds": 5})),
                   reply(tool_use(names[2], {})), reply(tool_use(FIND, {
                       "item_name": "bolts"})), reply("Done, with errors."))
        _, final = run_agent(mod, client, "try them all")
    finally:
        mod.MCP_CALL_TIMEOUT = mod_timeout
    results = [sent_tool_results(r)[0] for r in server.requests[1:5]]
    assert all(r["is_error"] for r in results)
    texts = [result_text(r) for r in results]
    assert "database is locked" in texts[0]
    assert "did not answer within 1 s" in texts[1]
    assert "stockroom failed" in texts[2]
    assert "stockroom failed" in texts[3] or "not running" in texts[3]
    assert final == "Done, with errors."


def test_a_server_that_does_not_start_is_one_line(mod, connected, server, client):
    """A bad command: one line at start, no MCP tools, and the agent works."""
    out = connected(APPROVED | {"enabledMcpjsonServers": ["broken"]},
                    {"broken": {"command": "/no/such/server"}})
    assert [line for line in out.splitlines() if "broken" in line] == [
        line for line in out.splitlines() if line.startswith("mcp: broken: did not "
                                                              "start")]
    assert "No such file" in out
    server.add(reply("Hello."))
    assert run_agent(mod, client, "hi")[1] == "Hello."


def test_an_unapproved_server_does_not_start(mod, connected, workspace):
    """No approval in the settings and no terminal: the server is not started, and
    disabledMcpjsonServers wins over enableAllProjectMcpServers."""
    out = connected({})
    assert "stockroom: not started (not approved" in out
    out = connected({"enableAllProjectMcpServers": True,
                     "disabledMcpjsonServers": ["stockroom"]})
    assert "disabledMcpjsonServers" in out
    assert events(workspace) == []


def test_the_sandbox_keeps_a_servers_program_read_only(mod, connected, workspace):
    """A server's program in the workspace is among what the sandbox keeps
    read-only, as a hook's is."""
    (workspace / "tools").mkdir()
    (workspace / "tools" / "server.py").write_text(SERVER.read_text())
    configure(workspace, {}, {"local": {"command": sys.executable,
                                        "args": ["tools/server.py"]}})
    assert (workspace / "tools").resolve() in mod.agent_programs()
