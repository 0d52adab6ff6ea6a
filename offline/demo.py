"""Play a chapter's scripted scenario when there is no API key.

`scripted_demo(chapter)` starts the scripted server in-process, copies the sample
project into a temporary directory, makes that the working directory, and points the
real SDK at the server through ANTHROPIC_BASE_URL and a placeholder key, exactly as a
live provider would be reached. The chapter then runs its own loop on the prompts it
is given. Everything is put back on exit.

Questions go to whoever is at the terminal: the chapter asks as it always does (a
permission prompt, a plan to approve), and the scripted model reads the answer in the
next request, as a real model would. Without a terminal (a pipe, a test, the docs
build) the chapter answers every question "no" by itself, and the banner says so.

An exercise file run with --offline (`python exercises/s03/ex2.py --offline`) plays
its exercise's own short scenario, when it has one: `SCENARIOS["ex2"]` of the module
`exercises_s03`, which the `offline` stand-ins in exercises/ add to this package.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
from contextlib import contextmanager
from pathlib import Path

from .scenarios import SCENARIOS
from .server import ScriptedServer, is_review, reviewed

SAMPLE_PROJECT = Path(__file__).parent / "sample_project"
_ENV_KEYS = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
RULE = "-" * 78
EXERCISE_FILE = re.compile(r"(?:^|/)(s\d\d)/(ex\d+)\.py$")  # exercises/[solutions/]s03/ex2.py


def copy_sample_project(chapter: str) -> Path:
    """A fresh copy of the sample project in a temporary directory."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{chapter}-demo-"))
    shutil.copytree(SAMPLE_PROJECT, workdir, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".tool-results"))
    return workdir


def running_exercise(chapter: str) -> str | None:
    """"ex2" when the program running is an exercise file of this chapter, else None."""
    found = EXERCISE_FILE.search(Path(sys.argv[0] or ".").resolve().as_posix())
    return found[2] if found and found[1] == chapter else None


def find_scenario(chapter: str) -> dict:
    """The scenario to play: the running exercise's own, else the chapter's (in
    scenarios.py, or in its own module scenario_sNN.py)."""
    exercise = running_exercise(chapter)
    if exercise:
        name = f"{__package__}.exercises_{chapter}"
        try:
            own = importlib.import_module(name).SCENARIOS
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            own = {}  # the real package, not a stand-in: no exercise scenarios here
        if exercise in own:
            return own[exercise]
    if chapter in SCENARIOS:
        return SCENARIOS[chapter]
    found = importlib.import_module(f"{__package__}.scenario_{chapter}").SCENARIO
    return found() if callable(found) else found  # a function: a fresh one each run


def someone_can_answer() -> bool:
    """Is stdin a terminal? The chapters ask only then (stdin_is_interactive)."""
    try:
        return sys.stdin is not None and not sys.stdin.closed and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


@contextmanager
def scripted_demo(chapter: str):
    """Yield the scenario's user prompts, inside the demo's workspace and server."""
    scenario = find_scenario(chapter)
    workdir = copy_sample_project(chapter)
    if scenario.get("setup"):
        scenario["setup"](workdir)
    extra_env = scenario.get("env", {})
    saved_env = {k: os.environ.get(k) for k in (*_ENV_KEYS, *extra_env)}
    saved_cwd = os.getcwd()
    try:
        with ScriptedServer(scenario["turns"], reviews=scenario.get("reviews")) as server:
            os.environ.update(extra_env, ANTHROPIC_BASE_URL=server.url,
                              ANTHROPIC_API_KEY="offline-demo")
            os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
            os.chdir(workdir)
            print(banner(chapter, scenario, workdir, someone_can_answer()))
            try:
                yield prompts(scenario, workdir)
                if scenario.get("reviews") is not None:
                    print(review_share(server.requests, scenario["prompts"][-1]))
            finally:
                os.chdir(saved_cwd)
                for key, value in saved_env.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
    finally:  # ended or interrupted, the learner learns where the copy is
        print(RULE)
        print(f"End of the scripted demo. The agent worked in {workdir},")
        print("a scratch copy of offline/sample_project. It stays when the demo ends:")
        print(f"look around, then delete it (rm -rf {workdir}).")
        print("To go live: cp .env.example .env, set ANTHROPIC_API_KEY, run again.")


def prompts(scenario: dict, workdir: Path):
    """The user's prompts, each after its step (`before`: a settings change ...)."""
    for index, prompt in enumerate(scenario["prompts"]):
        if step := scenario.get("before", {}).get(index):
            print(step(workdir))
        yield prompt


def review_share(requests: list, prompt: str) -> str:
    """What auto mode's reviewer cost in the last task, from what the server got:
    the agent's tool calls since `prompt`, those that reached the reviewer (its two
    looks at one call send the same document), and its requests."""
    agent = [r for r in requests if not is_review(r)]
    messages = agent[-1]["messages"] if agent else []
    start = next((i for i, m in enumerate(messages) if m["content"] == prompt),
                 len(messages))
    calls = sum(1 for m in messages[start:] if m["role"] == "assistant"
                for b in m["content"] if b.get("type") == "tool_use")
    looks = [reviewed(r) for r in requests if is_review(r)]
    asked = [d for d in looks if prompt in json.dumps(d)]
    seen = len({json.dumps({**d, "instruction": ""}, sort_keys=True) for d in asked})
    share = f" ({seen / calls:.0%})" if calls else ""
    return (f"auto mode's reviewer, last task: {seen} of its {calls} tool calls reached "
            f"it{share}, in {len(asked)} requests (a block costs two).")


def banner(chapter: str, scenario: dict, workdir: Path, answering: bool) -> str:
    """What the demo is, where it works, and who answers its questions."""
    asks = scenario.get("asks")
    if asks and answering:
        asks = (f"It asks you {asks}. Your answer is real: the scripted model reads it "
                "and goes on from there.")
    elif asks:
        asks = ("stdin is not a terminal, so every question the agent asks is answered "
                "'no'. Run it in a terminal to answer yourself.")
    about = [textwrap.fill(text, 78) for text in (asks, scenario.get("note")) if text]
    return "\n".join([
        RULE,
        f"{chapter} OFFLINE DEMO: {scenario['title']}",
        "No API key was found (or --offline was given), so a scripted model plays",
        "this chapter's scenario. It is served by a local scripted Messages API",
        "server and reached through the real anthropic SDK; the tools really run.",
        f"Workspace: {workdir} (a scratch copy; it stays after the demo)",
        *about,
        "To go live: cp .env.example .env, set ANTHROPIC_API_KEY, run again.",
        RULE,
    ])
