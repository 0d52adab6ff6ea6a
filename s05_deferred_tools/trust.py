"""trust: a folder's own programs run only once you trust the folder (s04 on).

A project's files can name programs for the agent to start: hooks in
`.claude/settings*.json` (s04), MCP servers in `.mcp.json` (s05). They run outside
the sandbox, with your rights, the moment the agent starts or a tool is called; in a
repository you cloned, someone else wrote them. So, as Claude Code does, the first
time an agent runs in a folder whose files would start programs, it shows what would
run and asks once whether you trust the folder. The answer is kept outside the
workspace, in your config folder (the workspace cannot vouch for itself), and
trusting a folder trusts what is inside it. With nobody to answer (stdin is not a
terminal), nothing of the project runs, and one line says so. code.py says what
would run (`project_programs`); this file keeps and asks. The same file stands in
every chapter from s04 on.

Reading map:
  s04 · trust: where answers are kept     trust_file(), kept_answer(), record()
  s04 · trust: asking once                folder_trusted(), is_trusted()
"""

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path


# === s04 · trust: where answers are kept ===
# Where the answers live: your config folder, never the workspace. TRUST_FILE_ENV
# names another file (the tests point it at a scratch one).
TRUST_FILE_ENV = "AGENT_COURSE_TRUST_FILE"
THIS_RUN = {}  # {folder: True/False}: decided for this run only, kept nowhere


def trust_file() -> Path:
    """The file of answers: $AGENT_COURSE_TRUST_FILE, else agent-course/trust.json
    in $XDG_CONFIG_HOME (or ~/.config). Claude Code keeps the same fact per project
    in ~/.claude.json (hasTrustDialogAccepted); the course does not write there."""
    if os.environ.get(TRUST_FILE_ENV):
        return Path(os.environ[TRUST_FILE_ENV])
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "agent-course" / "trust.json"


def answers() -> dict:
    """{folder: {"trusted": bool, "when": ...}}; an unreadable file counts as empty."""
    try:
        found = json.loads(trust_file().read_text(encoding="utf-8")).get("folders")
    except (OSError, ValueError, AttributeError):
        return {}
    return found if isinstance(found, dict) else {}


def kept_answer(folder: Path) -> bool | None:
    """The answer kept for `folder`, or for the nearest folder above it that has one
    (trusting a folder trusts what it holds, as in Claude Code); None: never asked."""
    kept = answers()
    for place in (folder, *folder.parents):
        answer = kept.get(str(place))
        if isinstance(answer, dict) and isinstance(answer.get("trusted"), bool):
            return answer["trusted"]
    return None


def record(folder: Path, trusted: bool) -> str | None:
    """Keep the answer for `folder` (written whole, then renamed: never half a
    file); None, or why it could not be kept (then it holds for this run only)."""
    THIS_RUN[folder] = trusted
    file, kept = trust_file(), answers()
    kept[str(folder)] = {"trusted": trusted, "when": time.strftime("%Y-%m-%d %H:%M")}
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=file.parent, delete=False,
                                         suffix=".tmp", encoding="utf-8") as f:
            json.dump({"folders": kept}, f, indent=1)
        os.replace(f.name, file)
    except OSError as e:
        with contextlib.suppress(OSError, NameError):
            os.unlink(f.name)
        return f"could not keep the answer in {file} ({e.strerror or e})"
    return None


# === s04 · trust: asking once ===
def is_trusted(folder: Path) -> bool:
    """May the project's programs run here? Asked where hooks are about to run:
    this run's answer, else the one kept; never asked: no."""
    if folder in THIS_RUN:
        return THIS_RUN[folder]
    return kept_answer(folder) is True


def folder_trusted(folder: Path, programs: list[str], interactive: bool,
                   say=print, ask=input) -> bool:
    """At the start of a run: does `folder` run the `programs` its files name? No
    programs: nothing to trust. A kept answer holds. Else ask, if someone can answer,
    showing what would run, and keep the answer; nobody to ask: no, in one line."""
    if not programs:
        return True
    answer = THIS_RUN.get(folder, kept_answer(folder))
    if answer is not None:
        THIS_RUN[folder] = answer
        if not answer:
            say(f"trust: {folder} is not trusted (your answer, kept in {trust_file()})"
                f": its {len(programs)} program(s) do not run")
        return answer
    if not interactive:
        THIS_RUN[folder] = False
        say(f"trust: {folder} is not trusted yet, so its {len(programs)} program(s) "
            "(hooks, MCP servers) do not run: start the agent at a terminal once "
            "to be asked")
        return False
    say(f"\n? Do you trust the files in {folder}?\n  They would start these "
        "programs, outside the sandbox, with your rights:")
    for program in programs:
        say(f"    {program}")
    answer = None
    while answer not in ("y", "yes", "n", "no"):
        try:
            answer = ask("  Trust this folder? [y]es / [n]o: ").strip().lower()
        except EOFError:
            answer = "n"
    if problem := record(folder, answer.startswith("y")):
        say(f"trust: {problem}; it holds for this run")
    return THIS_RUN[folder]
