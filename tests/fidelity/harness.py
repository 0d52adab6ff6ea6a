"""Play the same tool calls to Claude Code and to a chapter; say what each did.

A case is a workspace (files, a .claude/settings.json, a permission mode) and a list
of tool calls in Claude Code's names and fields. Both sides get the calls in ONE
assistant message from a scripted Messages API server (or, with `apart`, one message
per call, each sent after the last one's result), and answer with tool_results;
from those, and from the workspace afterwards, each call gets an outcome:

    {"decision": "allowed" | "asked" | "denied", "error": bool, "text": str}

plus the case's files after the calls. "asked" is what Claude Code sends to its
--permission-prompt-tool (bin/prompt_mcp.py records it and answers no), and what a
chapter sends to a person who is not there ("no one can answer").

Bash commands run through a stand-in shell on both sides unless the case says
`shell="real"`: bin/bash answers Claude Code's `eval '<cmd>'` with FIDELITY-RAN, and a
chapter's run_shell is replaced by one that answers the same. A verdict costs nothing
and harms nothing.

Claude Code's outcomes are deterministic for a version and a case's inputs, and a
process costs about 2 s of a core: they are recorded, one file per mechanism, in
recorded/ (committed), each keyed by the pinned version and the hash of the case's
inputs (Case.key). The suite plays the chapters live on every run and judges them
against the recording; with Claude Code installed it plays live every case whose
recording is missing (a new case, changed inputs, a new pinned version) and a few
recorded ones drawn at random, which must still come out as recorded (README.md, "The
recordings").
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import inspect
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anthropic
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(HERE.parent) not in sys.path:  # tests/, for warm.py (also run as a script)
    sys.path.append(str(HERE.parent))
import warm  # noqa: E402  (tests/warm.py: the course side's MCP server forked warm)
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
RECORDED = HERE / "recorded"  # <mechanism>.json: Claude Code's answers, by Case.key
CASE_ROOT = "/tmp/fidelity-case"  # a case's scratch folder, as a recording names it
INSTALL = "npm ci --prefix tests/fidelity"
# The version the suite measures, pinned in package.json; what ran is recorded in
# results/ (each mechanism's file, and claude_code.json: see probe()).
PINNED = json.loads((HERE / "package.json").read_text())["dependencies"][
    "@anthropic-ai/claude-code"]
RAN = "FIDELITY-RAN"
NOBODY = 65534  # Claude Code refuses bypassPermissions as root: it runs as nobody

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
import agent_as_user  # noqa: E402  (a Python and a course another user may run)
from offline.server import (ScriptedServer, error, is_review, reply,  # noqa: E402
                           reviewed, server_error, tool_use, verdict)

# Claude Code's tool -> the course's tool, and the fields that differ.
COURSE_TOOL = {"Bash": "run_shell", "Read": "read_file", "Write": "write_file",
               "Edit": "edit_file", "Glob": "list_files", "Grep": "grep_search",
               "TaskCreate": "task_create", "TaskUpdate": "task_update",
               "TaskGet": "task_get", "TaskList": "task_list",  # fields: the same
               "Agent": "agent"}
CLAUDE_NAME = {course: claude for claude, course in COURSE_TOOL.items()}
COURSE_FIELD = {"glob": "include"}
TOOLS = "Bash,Read,Write,Edit,Glob,Grep"  # Claude Code's --tools, unless a case says
# The MCP cases' server: the course's stockroom, from the workspace's .mcp.json on
# both sides, started by a Python that has the mcp SDK (see server_python).
STOCKROOM = ROOT / "offline" / "mcp_server.py"


@dataclass
class Case:
    id: str
    calls: list                      # [(Claude Code tool, input), ...]
    files: dict = field(default_factory=dict)     # path -> str or bytes
    settings: dict = field(default_factory=dict)  # .claude/settings.json
    mode: str = "default"
    shell: str = "stub"              # "stub": verdicts only; "real": bash runs it
    hooks: dict = field(default_factory=dict)     # hook script name -> its text
    mcp: bool = False                # the stockroom server in .mcp.json, approved
    apart: bool = False              # each call in its own message, after the last
    # mode "auto": what the API's own check says of each call (Claude Code 2.1.332
    # asks the API, auto_mode_facts.md), e.g. {"type": "evaluated", "outcome":
    # "flagged", "explanation": "..."}; None: the answer carries no verdict for it
    checks: list = field(default_factory=list)
    env: dict = field(default_factory=dict)  # more of Claude Code's environment
    tools: str = TOOLS               # Claude Code's --tools
    home: dict = field(default_factory=dict)  # files in the run's HOME: path -> text
    # agent calls (their prompts hold CHILD): what each child's first request holds
    # (child_facts) is part of the call's outcome, "child"
    children: bool = False

    def key(self) -> str:
        """The hash of what Claude Code's answer depends on: the pinned version and
        the case's inputs (the stand-ins' text and the MCP server's included)."""
        spec = json.dumps([self.calls, {k: v if isinstance(v, str) else v.hex()
                                        for k, v in self.files.items()},
                           self.settings, self.mode, self.shell, self.hooks,
                           PINNED, stand_ins()]
                          + [self.mcp, STOCKROOM.read_text()] * self.mcp
                          + ["apart"] * self.apart
                          + [["checks", self.checks]] * bool(self.checks)
                          + self.extra(), sort_keys=True)
        return hashlib.sha256(spec.encode()).hexdigest()[:24]


    def extra(self) -> list:
        """env, tools, home and children, in the key only when set: no recorded
        answer of a case without them changes."""
        given = {"env": self.env, "tools": self.tools if self.tools != TOOLS else "",
                 "home": self.home, "children": self.children and facts_version()}
        return [{k: v for k, v in given.items() if v}] if any(given.values()) else []


@functools.lru_cache(maxsize=None)
def version() -> str:
    try:
        out = subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except OSError:
        return ""
    return out.split()[0] if out.strip() else ""


def stand_ins() -> str:
    """The stand-in scripts' text: changing one makes every cached outcome stale."""
    return "".join(p.read_text() for p in sorted((HERE / "bin").iterdir()))


@functools.lru_cache(maxsize=None)
def mcp_json() -> dict:
    """The .mcp.json of the MCP cases: the stockroom, run by the Python running the
    tests. As root, Claude Code runs as nobody, who may not reach that Python (a
    pyenv under /root, a clone in `mktemp -d`): then a Python and a copy of the
    course nobody may read (agent_as_user.python_for)."""
    command, env, stockroom = sys.executable, {}, STOCKROOM
    if os.geteuid() == 0:
        found = agent_as_user.python_for(NOBODY)
        if found is None:
            pytest.skip("no Python with the mcp SDK that Claude Code (as nobody) can run")
        command, env, course = found
        stockroom = course / STOCKROOM.relative_to(ROOT)
    return {"mcpServers": {"stockroom": {"command": command, "args": [str(stockroom)],
                                         "env": env}}}


def installed() -> bool:
    return CLAUDE.exists() and bool(version())


# --- a workspace, the same for both sides ------------------------------------------

def make_workspace(case: Case, root: Path, for_claude: bool = False) -> Path:
    ws = root / "ws"
    (ws / ".claude").mkdir(parents=True)
    for name, body in case.files.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    hooks_dir = root / "hooks"
    hooks_dir.mkdir()
    for name, body in case.hooks.items():
        (hooks_dir / name).write_text(body)
        (hooks_dir / name).chmod(0o755)
    settings = json.loads(json.dumps(case.settings).replace("$HOOKS", str(hooks_dir)))
    if case.mcp:  # the project's server, approved as Claude Code's settings do it
        command, *args = warm.command(str(STOCKROOM))  # forked warm (tests/warm.py)
        mcp = mcp_json() if for_claude else {"mcpServers": {"stockroom": {
            "command": command, "args": args, "env": {}}}}
        (ws / ".mcp.json").write_text(json.dumps(mcp))
        settings["enabledMcpjsonServers"] = ["stockroom"]
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    return ws


def write_home(case: Case, home: Path) -> None:
    """The run's HOME, with the case's files in it."""
    home.mkdir()
    for name, body in case.home.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(body)


def snapshot(ws: Path) -> dict:
    """path -> text (or "<binary N bytes>") of every file, settings and results aside."""
    files = {}
    for path in sorted(ws.rglob("*")):
        rel = path.relative_to(ws).as_posix()
        if path.is_file() and not rel.startswith((".claude/", ".tool-results/",
                                                   ".mcp.json")):
            data = path.read_bytes()
            try:
                files[rel] = data.decode()
            except UnicodeDecodeError:
                files[rel] = f"<binary {len(data)} bytes>"
    return files


def text_of(block: dict) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return content or ""


def calls_answered(body: dict) -> int:
    """How many of the model's turns with tool calls a request already holds: the
    index of the turn to play next (one call or batch a turn)."""
    return sum(m["role"] == "assistant" and isinstance(m["content"], list)
               and any(b.get("type") == "tool_use" for b in m["content"])
               for m in body["messages"])


class OneMessage(ScriptedServer):
    """Answers the request with tools by the case's calls, in one message (or, for a
    case with `apart`, one message per call, each after the last one's result), then
    with "done"; any other request (Claude Code sends a few of its own) with "ok".
    Keeps the tool_results. The turn is counted from the conversation, not from the
    last message: Claude Code may end a request with a message of its own (a working
    directory that changed) after the tool_results, and asks again after "done"."""

    def __init__(self, turns: list, checks: dict | None = None,
                 reviews: dict | None = None):
        super().__init__()
        self.turns, self.results = turns, None
        self.checks = checks or {}  # tool_use id -> the API check's status (auto mode)
        self.asked = {}  # turn -> the first request that got it
        self.children = []  # a child agent's requests (CHILD in a user's text)
        self.reviews = reviews or {}  # a chapter's reviewer: action -> its answers
        # what each call's check read: Claude Code's request that brought the call
        # (its `safeguards`), by tool_use id; a chapter's reviewer's prompts, by action
        self.check_read: dict = {}

    def start(self) -> "OneMessage":
        """subtle: with Nagle's algorithm on, each answer that is not streamed waits
        for the client's delayed ACK (about 40 ms on loopback): most of a chapter's
        time here. Off, as the answer's head and body are written apart."""
        super().start()
        self._httpd.RequestHandlerClass.disable_nagle_algorithm = True
        return self

    def next_turn(self, body: dict) -> dict:
        with self._lock:
            self.requests.append(body)
            if is_review(body):  # a chapter's auto mode reviewer (reviews_for)
                key = action_key(reviewed(body)["action"])
                self.check_read[key] = self.check_read.get(key, "") + body["system"]
                answers = self.reviews.get(key)
                return answers.pop(0) if answers else NO_REVIEW
        if not body.get("tools"):
            return reply("ok")
        if any(CHILD in text for text in user_texts(body)):
            with self._lock:
                self.children.append(body)
            return reply("done")
        blocks = [b for m in body["messages"] if isinstance(m["content"], list)
                  for b in m["content"] if isinstance(b, dict)]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            self.results = results
        sent = calls_answered(body)
        if sent >= len(self.turns):
            return reply("done")
        turn = reply(*self.turns[sent])
        for block in self.turns[sent]:
            self.check_read[block["id"]] = json.dumps(body.get("safeguards") or [])
        self.asked.setdefault(sent, body)
        checked = {b["id"]: self.checks[b["id"]] for b in self.turns[sent]
                   if self.checks.get(b.get("id")) is not None}
        if checked and body.get("safeguards"):  # the API's check, only when asked for
            turn["safeguard_results"] = [{"type": "dangerous_tool_use", "status": {
                "type": "available", "tool_uses": checked}}]
        return turn


# --- auto mode: the API's check (Claude Code), a reviewer (a chapter) ---------------
# Claude Code 2.1.332 asks the API to check a call (OneMessage streams the case's
# `checks`); a chapter asks a reviewer of its own, a second request that forces the
# tool `verdict` (auto_mode.py). The same check, played to a chapter's reviewer:
# flagged -> block at both looks; not_flagged -> allow; unavailable -> a server error
# (the SDK's one retry too); None -> no review expected: a chapter that asks for one
# gets NO_REVIEW, an error, so its reviewer fails.
NO_REVIEW = error(400, "invalid_request_error",
                  "fidelity: the API checks nothing for this call (no review expected)")


def action_key(action: dict) -> str:
    """A reviewed action ({"tool", "input"}, auto_mode.project()) as a key."""
    return json.dumps(action, sort_keys=True)


def review_answers(check: dict | None) -> list:
    """A chapter's reviewer's answers to one call, from the API's check of it."""
    if check is None:
        return []
    if check["type"] == "unavailable":
        return [server_error(retry_after=0.001)] * 2  # no backoff
    if check.get("outcome") == "flagged":
        return [verdict("block", check.get("explanation") or "Flagged.")] * 2
    return [verdict("allow", "No rule applies to this action.")]


def reviews_for(case: Case, blocks: list) -> dict:
    """action_key -> the reviewer's answers, in order, for a chapter's calls (a call
    made twice has its answers queued in turn)."""
    reviews: dict = {}
    for block, check in zip(blocks, case.checks):
        action = {"tool": block["name"], "input": block["input"]}
        reviews.setdefault(action_key(action), []).extend(review_answers(check))
    return reviews


def auto_mode_rules(case: Case) -> list[str]:
    """The entries of every `autoMode` a case's settings files hold (the project's,
    .claude/settings.local.json among its files, ~/.claude/settings.json in home)."""
    files = [case.settings] + [json.loads(text) for name, text in
                               [*case.files.items(), *case.home.items()]
                               if name.endswith((".claude/settings.json",
                                                 ".claude/settings.local.json"))]
    return [entry for data in files for entries in data.get("autoMode", {}).values()
            for entry in entries]


def rules_read(case: Case, calls: list, keys: list, read: dict) -> None:
    """Each call's `rules`: which of the case's autoMode entries its check read (only
    for a case that has some: no other answer changes)."""
    if rules := auto_mode_rules(case):
        for call, key in zip(calls, keys):
            call["rules"] = [rule for rule in rules if rule in read.get(key, "")]


# --- a child agent's first request (the agent cases) ----------------------------------
# An agent call's prompt holds CHILD; a request that carries it in a user's text (a
# fork's directive, a fresh agent's first message) is the child's, and the server
# answers it "done". What the child's first request holds is compared with the
# request whose reply made the call: the same text on both sides means the same, so
# a text sent as a string or as a block, with or without cache_control, is one text.
CHILD = "FIDELITY-CHILD"
BILLING = "x-anthropic-billing-header:"  # Claude Code's first system block: metadata


def user_texts(body: dict) -> list[str]:
    return [b["text"] for m in body.get("messages", []) if m["role"] == "user"
            for b in blocks_of(m) if b.get("type") == "text"]


def blocks_of(message: dict) -> list[dict]:
    """A message's content as blocks, cache_control left out."""
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in content]


def said(message: dict, prompt: str) -> str:
    """A message in a few words: its role, then each block: a tool call's name (in
    Claude Code's names), tool_result, "the prompt" (the call's prompt, alone), "the
    directive" (a text holding it), or text."""
    words = []
    for b in blocks_of(message):
        if b["type"] == "tool_use":
            words.append(CLAUDE_NAME.get(b["name"], b["name"]))
        elif b["type"] == "text":
            text = b["text"].strip()
            words.append("the prompt" if text == prompt else
                         "the directive" if prompt in text else "text")
        else:
            words.append(b["type"])
    return f"{message['role']}: {', '.join(words)}"


def child_facts(parent: dict, child: dict, prompt: str) -> dict:
    """What a child's first request holds, against its parent's request: the system
    (the same, the same but Claude Code's billing header, or its own), the tools,
    how many of the parent's messages it repeats (all, none, or k of n), and what
    follows them."""
    systems = [[b["text"] for b in blocks_of({"content": r.get("system") or []})]
               for r in (parent, child)]
    bare = [[t for t in s if not t.startswith(BILLING)] for s in systems]
    given, sent = ([blocks_of(m) for m in r["messages"]] for r in (parent, child))
    k = next((i for i, (a, b) in enumerate(zip(given, sent)) if a != b),
             min(len(given), len(sent)))
    same_tools = tools_sent(parent) == tools_sent(child)
    return {"system": "the same" if systems[0] == systems[1] else
            "the same but the billing header" if bare[0] == bare[1] else "its own",
            "tools": "the same" if same_tools else "its own",
            "repeats": "all" if k == len(given) else "none" if k == 0 else
            f"{k} of {len(given)}",
            "then": [said(m, prompt) for m in child["messages"][k:]]}


def tools_sent(request: dict) -> list:
    """A request's tools but the suite's own prompt tool (bin/prompt_mcp.py, Claude
    Code's --permission-prompt-tool: the parent's list leaves it out, a fresh child's
    lists it)."""
    return [t for t in request["tools"] if t["name"] != "mcp__fidelity__ask"]


@functools.cache
def facts_version() -> str:
    """child_facts' code: recorded facts are stale when it changes (Case.key)."""
    code = "".join(inspect.getsource(f)
                   for f in (blocks_of, said, tools_sent, child_facts))
    return hashlib.sha256(code.encode()).hexdigest()[:12]


def children(case: Case, server: OneMessage, blocks: list, calls: list) -> None:
    """Each agent call's outcome gains "child": what its child's first request held
    (None: no child started)."""
    if not case.children:
        return
    for i, block in enumerate(blocks):
        prompt, calls[i]["child"] = block["input"].get("prompt", ""), None
        if CLAUDE_NAME.get(block["name"], block["name"]) != "Agent":
            continue
        first = next((r for r in server.children
                      if any(prompt in text for text in user_texts(r))), None)
        turn = i if case.apart else 0
        calls[i]["child"] = first and child_facts(server.asked[turn], first, prompt)


def turns(case: Case, blocks: list) -> list:
    """The assistant messages that carry a case's calls: one, or one per call."""
    return [[b] for b in blocks] if case.apart else [blocks]


# --- Claude Code -------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def tools_for(as_nobody: bool) -> Path:
    """The folder that holds `claude` and bin/ (the stand-ins) as the runner can reach
    them: this one, or, when nobody may not enter it or its bin/ (a clone under /root
    or `mktemp -d`, mode 700; node_modules may be a link to a reachable copy),
    a copy in a fresh folder of /tmp (the 400 MB binary linked, not copied, if it can
    be), removed when the tests end."""
    probe = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "test", "-x", str(CLAUDE.resolve()), "-a", "-r", str(HERE / "bin" / "prompt_mcp.py")]
    if not as_nobody or subprocess.run(probe, check=False).returncode == 0:
        return HERE
    copy = Path(tempfile.mkdtemp(prefix="fidelity-tools-"))
    atexit.register(shutil.rmtree, copy, True)
    shutil.copytree(HERE / "bin", copy / "bin")
    try:
        os.link(CLAUDE.resolve(), copy / "claude")
    except OSError:  # another file system
        shutil.copy2(CLAUDE.resolve(), copy / "claude")
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o755)
    return copy


def run_claude(case: Case) -> dict:
    """{"case": id, "calls": [outcome, ...], "files": {...}} from Claude Code, played
    live; the case's scratch folder, where a result names it, reads CASE_ROOT."""
    root = Path(tempfile.mkdtemp(prefix="fidelity-"))
    try:
        result = _run_claude(case, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(result)
    for path in sorted({str(root), os.path.realpath(root)}, key=len, reverse=True):
        text = text.replace(json.dumps(path)[1:-1], CASE_ROOT)
    return {"case": case.id, **json.loads(text)}


def _run_claude(case: Case, root: Path) -> dict:
    ws, home = make_workspace(case, root, for_claude=True), root / "home"
    write_home(case, home)
    as_nobody = os.geteuid() == 0  # as root: drop to nobody; else run as we are
    tools = tools_for(as_nobody)
    claude = CLAUDE if tools == HERE else tools / "claude"
    (home / ".claude.json").write_text(json.dumps({  # the workspace is trusted
        "hasCompletedOnboarding": True,
        "projects": {str(ws): {"hasTrustDialogAccepted": True}}}))
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"fidelity": {
        "command": "python3", "args": [str(tools / "bin" / "prompt_mcp.py")]}}}))
    asked = root / "asked.jsonl"
    asked.touch()
    root.chmod(0o755)
    if as_nobody:
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(root)], check=True)
    blocks = [tool_use(name, dict(tool_input)) for name, tool_input in case.calls]
    checks = {b["id"]: check for b, check in zip(blocks, case.checks)}
    with OneMessage(turns(case, blocks), checks) as server:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
               "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-fidelity",
               "SHELL": str(tools / "bin" / "bash") if case.shell == "stub"
               else "/bin/bash", "FIDELITY_ASKED": str(asked), "LANG": "C.UTF-8",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
               # MCP tools sent whole, not deferred: a case's one message calls them
               # without a ToolSearch first (the course's side loads them the same way)
               "ENABLE_TOOL_SEARCH": "false",
               # the stockroom's start may take long on a busy machine: without it,
               # its tools are not there, and the answer is not the recorded one
               "MCP_TIMEOUT": "60000", **case.env}
        proc = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            * as_nobody + [str(claude), "-p", "go", "--output-format", "json",
             "--permission-mode", case.mode,
             "--tools", case.tools,
             "--mcp-config", str(root / "mcp.json"),
             "--permission-prompt-tool", "mcp__fidelity__ask"],
            # a guard against a hang, not a claim about speed: 1,200 calls take a
            # minute of a quiet core, and a busy machine may take many times that
            cwd=ws, env=env, capture_output=True, text=True,
            timeout=120 + 2 * len(case.calls))
        results = {b["tool_use_id"]: b for b in server.results or []}
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(f"Claude Code failed (exit {proc.returncode}): "
                           f"{proc.stderr[-500:]}") from None
    read = dict(server.check_read)
    denied = {d["tool_use_id"] for d in out.get("permission_denials", [])}
    asks = {json.loads(line).get("tool_use_id") for line in asked.read_text().splitlines()}
    calls = []
    for block in blocks:
        # no result at all: a hook stopped the run before the call
        result = results.get(block["id"], {"is_error": True, "content": "(stopped)"})
        decision = ("asked" if block["id"] in asks else
                    "denied" if block["id"] in denied else "allowed")
        calls.append({"decision": decision, "error": bool(result.get("is_error")),
                      "text": text_of(result)})
    rules_read(case, calls, [b["id"] for b in blocks], read)
    children(case, server, blocks, calls)
    return {"calls": calls, "files": snapshot(ws)}


class Ok(ScriptedServer):
    """Answers every request with "ok": a session that starts, and ends."""

    def next_turn(self, body: dict) -> dict:
        with self._lock:
            self.requests.append(body)
        return reply("ok")


def run_once(files: dict, *argvs: list) -> tuple[list[str], list[dict]]:
    """Claude Code run once per argv in a fresh workspace holding `files`, against a
    server that answers "ok" (as nobody when we are root): what each run printed, and
    every request the server received."""
    root = Path(tempfile.mkdtemp(prefix="fidelity-once-"))
    try:
        ws, home = root / "ws", root / "home"
        home.mkdir()
        for name, body in {".keep": "", **files}.items():
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            (ws / name).write_text(body)
        as_nobody = os.geteuid() == 0
        tools = tools_for(as_nobody)
        claude = CLAUDE if tools == HERE else tools / "claude"
        (home / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True,
            "projects": {str(ws): {"hasTrustDialogAccepted": True}}}))
        root.chmod(0o755)
        if as_nobody:
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(root)], check=True)
        run_as = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                  "--clear-groups"] * as_nobody
        with Ok() as server:
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
                   "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-fidelity",
                   "LANG": "C.UTF-8", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                   "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
            printed = [subprocess.run(run_as + [str(claude), *argv], cwd=ws, env=env,
                                      capture_output=True, text=True, timeout=120).stdout
                       for argv in argvs]
            return printed, list(server.requests)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def probe() -> dict:
    """What the installed Claude Code is and how it starts, for results/claude_code.json
    (the s03 README's note says both): its version, the permission modes its --help
    lists, and the mode a run with -p and no --permission-mode reports at its start."""
    (helped, started), _ = run_once({}, ["--help"], [
        "-p", "hi", "--output-format", "stream-json", "--verbose", "--tools", "Read"])
    init = next((json.loads(line) for line in started.splitlines()
                 if line.startswith("{") and '"subtype":"init"' in line.replace(" ", "")),
                {})
    modes = re.search(r"--permission-mode .*?\(choices:(.*?)\)", helped, re.S)
    return {"claude_code": version(), "pinned": PINNED,
            "reports_version": init.get("claude_code_version"),
            "permission_modes": sorted(re.findall(r'"(\w+)"', modes[1] if modes else "")),
            "print_mode_starts_in": init.get("permissionMode")}


# --- the recordings ----------------------------------------------------------------
# Replayed live on every run with Claude Code installed, besides every case with no
# recording: FIDELITY_LIVE recorded cases a mechanism (a number, or "all"), drawn at
# random among those of at most SAMPLE_CALLS calls (a corpus of 1,200 commands is one
# case, and a minute of Claude Code); FIDELITY_SEED repeats a draw.
LIVE = os.environ.get("FIDELITY_LIVE", "1")
SAMPLE_CALLS = 20


def recording(mechanism: str) -> Path:
    return RECORDED / f"{mechanism.replace(' ', '-')}.json"


def recorded(mechanism: str) -> dict:
    """Case.key -> Claude Code's answer, as recorded for the pinned version."""
    path = recording(mechanism)
    data = json.loads(path.read_text()) if path.exists() else {}
    return data.get("cases", {}) if data.get("claude_code") == PINNED else {}


def record(mechanism: str, answers: dict) -> None:
    """The mechanism's recording holds these answers and no others (one a line)."""
    RECORDED.mkdir(exist_ok=True)
    lines = [f"  {json.dumps(key)}: {json.dumps(answer, ensure_ascii=False, sort_keys=True)}"
             for key, answer in sorted(answers.items(), key=lambda a: (a[1]["case"], a[0]))]
    head = json.dumps({"claude_code": PINNED, "mechanism": mechanism})[:-1]
    recording(mechanism).write_text(head + ', "cases": {\n' + ",\n".join(lines) + "\n}}\n",
                                    encoding="utf-8")


def drawn(cases: list, seed: int) -> list:
    """The recorded cases replayed live this run."""
    if LIVE == "all":
        return list(cases)
    small = [c for c in cases if len(c.calls) <= SAMPLE_CALLS]
    return random.Random(seed).sample(small, min(int(LIVE), len(small)))


# --- a chapter ---------------------------------------------------------------------

def course_input(name: str, tool_input: dict) -> tuple[str, dict]:
    if name.startswith("mcp__"):  # the same name on both sides
        return name, dict(tool_input)
    return COURSE_TOOL[name], {COURSE_FIELD.get(k, k): v for k, v in tool_input.items()}


def run_chapter(mod, case: Case) -> dict:
    """The same calls through the chapter's own agent_loop, real SDK, scripted server."""
    root = Path(tempfile.mkdtemp(prefix="fidelity-"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            return _run_chapter(mod, case, root, monkeypatch)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def _run_chapter(mod, case: Case, root: Path, monkeypatch) -> dict:
    ws = make_workspace(case, root)
    monkeypatch.chdir(ws)
    if case.mode == "auto" or case.home:  # a home of its own, as Claude Code has:
        write_home(case, root / "home")    # the reviewer reads ~/.claude's rules
        monkeypatch.setenv("HOME", str(root / "home"))
    if hasattr(mod, "THIS_RUN"):  # trusted (s04 on), as Claude Code's config says on
        monkeypatch.setitem(mod.THIS_RUN, ws.resolve(), True)  # its side: hooks run
    if case.shell == "stub":
        monkeypatch.setitem(mod.TOOL_HANDLERS, "run_shell",
                            lambda agent, command, timeout=None: RAN)
    blocks = [tool_use(*course_input(name, tool_input))
              for name, tool_input in case.calls]
    server = OneMessage(turns(case, blocks), reviews=reviews_for(case, blocks))
    with server, open(os.devnull, "w") as quiet:
        agent = mod.Agent(anthropic.Anthropic(api_key="fidelity", base_url=server.url,
                                              max_retries=0))
        if hasattr(agent, "permissions"):  # s03 on: the mode the case runs in
            agent.permissions.mode = case.mode
        stdout, sys.stdout = sys.stdout, quiet
        try:
            if case.mcp:  # started as the chapter's main() does; schemas loaded
                mod.connect_mcp_servers(agent)
                agent.loaded += [t["name"] for t in mod.TOOLS
                                 if t["name"].startswith("mcp__")]
            mod.agent_loop([{"role": "user", "content": "go"}], agent)
        finally:
            if case.mcp:
                mod.disconnect_mcp_servers(agent)
            if hasattr(agent, "close"):
                agent.close()
            sys.stdout = stdout
    results = {b["tool_use_id"]: b for b in server.results or []}
    calls = []
    for block in blocks:
        result = results.get(block["id"], {"is_error": True, "content": "(stopped)"})
        text = text_of(result)
        decision = "allowed"
        if text.startswith("Permission denied") or "Permission denied:" in text[:40]:
            decision = "asked" if "no one can answer" in text else "denied"
        calls.append({"decision": decision, "error": bool(result.get("is_error")),
                      "text": text})
    rules_read(case, calls, [action_key({"tool": b["name"], "input": b["input"]})
                             for b in blocks], server.check_read)
    children(case, server, blocks, calls)
    return {"calls": calls, "files": snapshot(ws)}
