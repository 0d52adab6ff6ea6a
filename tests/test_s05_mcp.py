"""s05's MCP servers, through the real loop: the stockroom server (offline/mcp_server.py)
configured in the workspace's `.mcp.json`, started by the chapter with the official SDK.

Each test runs against s05 and every later chapter. The server logs its pid and every
call that reaches it to a file outside the workspace: the tests read what it saw, and
check that no server process is left when the agent is done.
"""

import importlib
import json
import os
import random
import re
import signal
import subprocess
import sys

import warm  # tests/warm.py: chapter runs forked warm

import pytest
from conftest import (
    GUARD,
    ROOT,
    assert_no_process,
    call_tool,
    chapter_params,
    clean_env,
    command_lines,
    load_chapter,
    result_text,
    run_agent,
    sent_tool_results,
    wait_until,
)
from conftest import the_agent

from offline.server import reply, tool_use

# Their hooks and MCP servers run: the folder is trusted (s04 · trust).
pytestmark = pytest.mark.usefixtures("trusted_folder")

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
    command, *args = warm.command(str(SERVER))  # the server forked warm (tests/warm.py)
    servers = servers or {"stockroom": {
        "command": command, "args": args,
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
        mod.connect_mcp_servers(the_agent(mod))
        return capsys.readouterr().out
    yield connect
    mod.disconnect_mcp_servers(the_agent(mod))
    pids = [e["started"] for e in events(workspace) if "started" in e]
    wait_until(lambda: not any(alive(p) for p in pids))  # a stopped one takes a moment
    assert not [p for p in pids if alive(p)], "an MCP server outlived the agent"
    assert not [t for t in mod.TOOLS if t["name"].startswith("mcp__")]


APPROVED = {"enabledMcpjsonServers": ["stockroom"]}
# find_supplier claims readOnlyHint, which asks all the same: this rule is your word
ALLOW_FIND = {"permissions": {"allow": [FIND]}}
ALLOW_ALL = {"permissions": {"allow": ["mcp__stockroom"]}}


def test_first_request_names_the_mcp_tools_but_carries_no_schema(mod, connected,
                                                                 server, client):
    """With the server connected, the first request's tools are the built-ins only
    (cache mark unchanged); the system prompt names every MCP tool, sorted."""
    out = connected(APPROVED)
    assert "stockroom: 28 tools, deferred" in out
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
    connected(APPROVED | ALLOW_FIND)
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
    assert the_agent(mod).loaded == [ORDER]


def test_deny_rules_stop_calls_before_the_server_sees_them(mod, connected, workspace):
    """A deny rule naming the tool, or the whole server (with or without `__*`),
    refuses the call: the server never hears of it. One server for the three rules:
    the settings are read at each call, and a server's start costs seconds."""
    connected(APPROVED)
    for rule in (ORDER, "mcp__stockroom", "mcp__stockroom__*"):
        configure(workspace, APPROVED | {"permissions": {
            "deny": [rule], "defaultMode": "bypassPermissions"}})
        call_tool(mod, "tool_search", query=f"select:{ORDER}")
        output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=10)
        assert is_error and "deny rule" in output, (rule, output)
        assert "place_order" not in calls_seen(workspace), rule
    configure(workspace, APPROVED | {"permissions": {"defaultMode": "bypassPermissions"}})
    output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=10)
    assert not is_error and calls_seen(workspace) == ["place_order"], output


def test_a_tool_asks_in_default_mode_whatever_its_server_claims(mod, connected,
                                                                  workspace):
    """place_order does not say it only reads, and find_supplier's server claims it
    does (readOnlyHint): in default mode both ask (no terminal: no), as in Claude
    Code, and the line says which is only a claim; with allow rules both run."""
    connected(APPROVED)
    call_tool(mod, "tool_search", query=f"select:{ORDER},{FIND}")
    output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=10)
    assert is_error and "no one can answer" in output
    assert "is not marked read-only (readOnlyHint)" in output
    output, is_error = call_tool(mod, FIND, item_name="bolts")
    assert is_error and "no one can answer" in output
    assert "claims to be read-only (its server's readOnlyHint)" in output
    assert calls_seen(workspace) == []
    (workspace / ".claude" / "settings.json").write_text(json.dumps(
        APPROVED | {"permissions": {"allow": [ORDER, FIND]}}))
    output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=10)
    assert not is_error and "ordered from Fixings Ltd" in output
    assert not call_tool(mod, FIND, item_name="bolts")[1]
    assert calls_seen(workspace) == ["place_order", "find_supplier"]


def test_plan_mode_asks_for_a_claimed_read_only_tool_and_denies_the_rest(
        mod, connected, workspace):
    """Plan mode: a tool whose server claims readOnlyHint is not denied (it may be
    what you explore with) but asks, as in default mode; one that claims nothing is
    denied, as every writing call is in plan mode."""
    connected(APPROVED | {"permissions": {"defaultMode": "plan"}})
    call_tool(mod, "tool_search", query=f"select:{ORDER},{FIND}")
    output, is_error = call_tool(mod, FIND, item_name="bolts")
    assert is_error and "plan mode: mcp__stockroom__find_supplier claims" in output
    output, is_error = call_tool(mod, ORDER, item_name="bolts", quantity=1)
    assert is_error and "plan mode: only read-only calls run" in output
    assert calls_seen(workspace) == []


def test_a_hook_matching_mcp_sees_the_call(mod, connected, workspace):
    """A PreToolUse hook with the matcher `mcp__.*` receives the MCP name and input."""
    seen = workspace.parent / "hook.json"
    hook = {"type": "command",
            "command": f"{sys.executable} -c \"import sys; open({str(seen)!r}, 'w')"
                       ".write(sys.stdin.read())\""}
    connected(APPROVED | ALLOW_FIND | {"hooks": {"PreToolUse": [
        {"matcher": "mcp__.*", "hooks": [hook]}]}})
    call_tool(mod, "tool_search", query=f"select:{FIND}")
    assert not call_tool(mod, FIND, item_name="hinges")[1]
    payload = json.loads(seen.read_text())
    assert payload["tool_name"] == FIND
    assert payload["tool_input"] == {"item_name": "hinges"}


def test_error_result_crash_and_timeout_are_data(mod, connected, workspace, server,
                                                 client):
    """An isError result, a call that times out and a server that dies mid-call each
    give an is_error tool_result; the agent finishes its task."""
    connected(APPROVED | ALLOW_ALL)
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


def test_environment_variables_fill_in_the_config(mod, connected, workspace,
                                                  monkeypatch):
    """${VAR} and ${VAR:-default} in command, args and env come from the agent's
    environment; a server that needs a variable nobody set does not start, one
    line names the variable, and the other servers start."""
    monkeypatch.setenv("STOCKROOM_PYTHON", sys.executable)
    monkeypatch.setenv("STOCKROOM_HOME", str(workspace.parent))
    monkeypatch.delenv("STOCKROOM_NO_SUCH_KEY", raising=False)
    out = connected({"enabledMcpjsonServers": ["keyed", "stockroom"]}, {
        "keyed": {"command": sys.executable, "args": [str(SERVER)],
                  "env": {"STOCKROOM_KEY": "${STOCKROOM_NO_SUCH_KEY}"}},
        "stockroom": {"command": "${STOCKROOM_PYTHON}", "args": [str(SERVER)],
                      "env": {"STOCKROOM_LOG": "${STOCKROOM_HOME}/stockroom.log",
                              "STOCKROOM_TEST_TOOLS": "${STOCKROOM_TESTS:-1}"}}})
    assert [line for line in out.splitlines() if "keyed" in line] == [(
        "mcp: keyed: not started: ${STOCKROOM_NO_SUCH_KEY} not set in the environment "
        "(nor a default, as in ${VAR:-default})")]
    assert "stockroom: 28 tools, deferred" in out  # the test tools: the default, 1
    assert [e for e in events(workspace) if "started" in e]  # its log: where we said


def test_expansion_is_claude_codes(mod, monkeypatch):
    """The forms as Claude Code 2.1.331 expanded them in .mcp.json (measured): a
    variable set to "" wins over the default, a bare $VAR stays, the default runs to
    the closing brace; one unset with no default is named, and left as written."""
    expand = importlib.import_module(f"{mod.__package__}.mcp_client").expand
    monkeypatch.setenv("CC_SET", "seven")
    monkeypatch.setenv("CC_EMPTY", "")
    monkeypatch.delenv("CC_UNSET", raising=False)
    forms = {"${CC_SET}": "seven", "${CC_UNSET:-dflt}": "dflt", "${CC_EMPTY:-dflt}": "",
             "$CC_SET": "$CC_SET", "${CC_UNSET:-x:-y}": "x:-y",
             "${CC_SET}-${CC_SET:-no}": "seven-seven"}
    missing = []
    assert {form: expand(form, missing) for form in forms} == forms
    assert missing == []
    assert expand("--key=${CC_UNSET}", missing) == "--key=${CC_UNSET}"
    assert missing == ["CC_UNSET"]


def test_names_the_api_would_refuse_are_left_out_with_one_line(mod, connected,
                                                               workspace, server,
                                                               client):
    """A tool whose mcp__stockroom__... name is over 64 characters, and a second tool
    spelled like an earlier one (`stock_count` after `stock.count`, its dot made
    `_`), are left out, on one line; with every other MCP tool loaded, the request
    passes the API's rule (the scripted server checks it) and the kept tool runs."""
    out = connected(APPROVED | ALLOW_ALL)
    long_name = "reconcile_stock_counts_across_every_warehouse_and_supplier"
    assert [line for line in out.splitlines() if "left out" in line] == [(
        f"mcp: stockroom: tools left out: {long_name} (mcp__stockroom__{long_name} "
        "has 74 characters, over the API's 64); stock_count "
        "(mcp__stockroom__stock_count is an earlier tool's name)")]
    names = [t["name"] for t in mod.TOOLS if t["name"].startswith("mcp__")]
    assert len(set(names)) == len(names) == 28
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in names)
    assert "(this tool is stock.count)" in mod.TOOL_BY_NAME[
        "mcp__stockroom__stock_count"]["description"]
    for first in range(0, len(names), mod.MAX_SEARCH_RESULTS):  # at most 20 a time
        call_tool(mod, "tool_search", query="select:" + ",".join(
            names[first:first + mod.MAX_SEARCH_RESULTS]))
    server.add(reply(tool_use("mcp__stockroom__stock_count", {})), reply("Four."))
    run_agent(mod, client, "how many items?")
    sent = [t["name"] for t in server.requests[0]["tools"]]
    assert set(names) <= set(sent)
    assert result_text(sent_tool_results(server.requests[1])[0]) == "4 items"


@pytest.fixture(params=chapter_params("s05"))
def chapter(request):
    return request.param


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP],
                         ids=["kill", "hangup"])
def test_kill_or_a_closed_terminal_leaves_no_process(chapter, workspace, server,
                                                     signum):
    """`kill PID` (SIGTERM), or the terminal closing (SIGHUP), while the agent waits
    for an MCP call: a real CLI run exits with 128 + the signal, no traceback, and
    no server process is left, nor (s06) a command it started in the background.
    The server's command line carries this run's tag, from ${STOCKROOM_TAG}."""
    marker = f"{os.getpid() % 100_000:05d}{random.randrange(10**6):06d}"
    tag = f"tag-{marker}"
    configure(workspace, APPROVED | ALLOW_ALL, {"stockroom": {
        "command": sys.executable, "args": [str(SERVER), "${STOCKROOM_TAG}"],
        "env": {"STOCKROOM_LOG": str(workspace.parent / "stockroom.log"),
                "STOCKROOM_TEST_TOOLS": "1"}}})
    background = [reply(tool_use("run_shell", {"command": f"sleep 961.{marker}",
                                               "run_in_background": True}))]
    server.add(reply(tool_use("tool_search", {"query": "select:mcp__stockroom__sleep"})),
               *background * (chapter >= "s06"),
               reply(tool_use("mcp__stockroom__sleep", {"seconds": 120})),
               reply("never sent"))
    proc = warm.Popen(
        [sys.executable, str(ROOT / chapter / "code.py"), "wait for it"], cwd=workspace,
        env=clean_env(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url,
                      STOCKROOM_TAG=tag),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        assert wait_until(lambda: "sleep" in calls_seen(workspace),
                          unless=lambda: proc.poll() is not None), (
            "the call never reached the server")
        if chapter >= "s06":  # the background command runs: it could outlive us
            assert command_lines(f"sleep 961.{marker}")
        proc.send_signal(signum)  # the server is busy: it will not end on its own
        out, err = proc.communicate(timeout=GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_no_process(f"mcp_server.py {tag}")
    assert_no_process(f"sleep 961.{marker}")
    assert proc.returncode == 128 + signum, out + err
    assert "Traceback" not in err
