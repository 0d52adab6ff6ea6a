"""Ask the pinned Claude Code what its auto mode does, offline: the source of
auto_mode_facts.md.

    python tests/fidelity/auto_mode_probe.py OUT_DIR [options as environment]

Runs `claude -p --permission-mode auto` once (as nobody when root, as the fidelity
suite does) against a scripted Messages API server that answers the request with
tools by the calls in CALLS (one message per call, each after the last one's
result), then "done"; any other request gets "ok". It writes every request body
(requests.json), what Claude Code printed (stdout.txt, stderr.txt) and the prompts it
asked (asked.jsonl, with PROMPT_TOOL=1) into OUT_DIR.

Claude Code 2.1.332's auto mode is checked by the API itself: the request carries a
`safeguards` field and the streamed answer's message_delta carries
`safeguard_results` (see auto_mode_facts.md). OUTCOME plays that check: one status
for every call, or a list (one per call), e.g.
    OUTCOME='{"type": "evaluated", "outcome": "flagged", "explanation": "..."}'
Without OUTCOME the answer carries none, as a local server or gateway would.

    CALLS           JSON [[tool, input], ...]       (default: one python one-liner)
    SETTINGS        JSON for .claude/settings.json  (default {})
    LOCAL           text for .claude/settings.local.json
    USER_SETTINGS   text for ~/.claude/settings.json
    PROMPT_TOOL=1   --permission-prompt-tool records the questions (bin/prompt_mcp.py)
    MODE            the permission mode (default auto)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]

import harness

from offline.server import ScriptedServer, reply, tool_use

ONE_LINER = [["Bash", {"command": "python3 -c \"print(42)\"", "description": "run"}]]


class Probe(ScriptedServer):
    """The calls, one message each; a verdict of the API's check on each if asked."""

    def __init__(self, calls: list, outcome):
        super().__init__()
        self.calls, self.outcome = calls, outcome

    def next_turn(self, body: dict) -> dict:
        with self._lock:
            self.requests.append(body)
        if not body.get("tools"):
            return reply("ok")
        sent = harness.calls_answered(body)
        if sent >= len(self.calls):
            return reply("done")
        block = tool_use(*self.calls[sent])
        turn = reply(block)
        if self.outcome is not None and body.get("safeguards"):
            status = self.outcome[sent] if isinstance(self.outcome, list) else self.outcome
            turn["safeguard_results"] = [{"type": "dangerous_tool_use", "status": {
                "type": "available", "tool_uses": {block["id"]: status}}}]
        return turn


def main(out: Path) -> None:
    env_json = lambda name, default: json.loads(os.environ.get(name) or default)
    calls, outcome = env_json("CALLS", json.dumps(ONE_LINER)), env_json("OUTCOME", "null")
    root = Path(tempfile.mkdtemp(prefix="auto-mode-probe-"))
    try:
        ws, home = root / "ws", root / "home"
        (ws / ".claude").mkdir(parents=True)
        (home / ".claude").mkdir(parents=True)
        (ws / "a.txt").write_text("hello\n")
        (ws / ".claude" / "settings.json").write_text(os.environ.get("SETTINGS") or "{}")
        for name, path in [("LOCAL", ws / ".claude" / "settings.local.json"),
                           ("USER_SETTINGS", home / ".claude" / "settings.json")]:
            if os.environ.get(name):
                path.write_text(os.environ[name])
        (home / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True,
            "projects": {str(ws): {"hasTrustDialogAccepted": True}}}))
        as_nobody = os.geteuid() == 0
        tools = harness.tools_for(as_nobody)
        claude = harness.CLAUDE if tools == harness.HERE else tools / "claude"
        asked, extra = root / "asked.jsonl", []
        asked.touch()
        if os.environ.get("PROMPT_TOOL"):
            (root / "mcp.json").write_text(json.dumps({"mcpServers": {"fidelity": {
                "command": "python3", "args": [str(tools / "bin" / "prompt_mcp.py")]}}}))
            extra = ["--mcp-config", str(root / "mcp.json"),
                     "--permission-prompt-tool", "mcp__fidelity__ask"]
        root.chmod(0o755)
        if as_nobody:
            subprocess.run(["chown", "-R", f"{harness.NOBODY}:{harness.NOBODY}", str(root)],
                           check=True)
        run_as = ["setpriv", f"--reuid={harness.NOBODY}", f"--regid={harness.NOBODY}",
                  "--clear-groups"] * as_nobody
        with Probe(calls, outcome) as server:
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
                   "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-fidelity",
                   "LANG": "C.UTF-8", "FIDELITY_ASKED": str(asked),
                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                   "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
            proc = subprocess.run(
                run_as + [str(claude), "-p", "run the python one-liner", "--output-format",
                          "json", "--permission-mode", os.environ.get("MODE", "auto"),
                          "--tools", "Bash,Read,Write,Edit,Glob,Grep", *extra],
                cwd=ws, env=env, capture_output=True, text=True, timeout=300,
                check=False)
        out.mkdir(parents=True, exist_ok=True)
        (out / "requests.json").write_text(json.dumps(server.requests, indent=1))
        (out / "stdout.txt").write_text(proc.stdout)
        (out / "stderr.txt").write_text(proc.stderr)
        shutil.copy(asked, out / "asked.jsonl")
        print(f"exit {proc.returncode}, {len(server.requests)} requests -> {out}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
