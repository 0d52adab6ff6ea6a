"""Play a chapter's scripted scenario when there is no API key.

`scripted_demo(chapter)` starts the scripted server in-process, copies the sample
project into a temporary directory, makes that the working directory, and points the
real SDK at the server through ANTHROPIC_BASE_URL and a placeholder key, exactly as a
live provider would be reached. The chapter then runs its own loop on the prompts it
is given. Everything is put back on exit.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import importlib

from .scenarios import SCENARIOS
from .server import ScriptedServer

SAMPLE_PROJECT = Path(__file__).parent / "sample_project"
_ENV_KEYS = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
RULE = "-" * 78


def copy_sample_project(chapter: str) -> Path:
    """A fresh copy of the sample project in a temporary directory."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{chapter}-demo-"))
    shutil.copytree(SAMPLE_PROJECT, workdir, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".tool-results"))
    return workdir


def find_scenario(chapter: str) -> dict:
    """A chapter's scenario: in scenarios.py, or in its own module scenario_sNN.py."""
    if chapter in SCENARIOS:
        return SCENARIOS[chapter]
    return importlib.import_module(f"{__package__}.scenario_{chapter}").SCENARIO


@contextmanager
def scripted_demo(chapter: str):
    """Yield the scenario's user prompts, inside the demo's workspace and server."""
    scenario = find_scenario(chapter)
    workdir = copy_sample_project(chapter)
    if scenario.get("setup"):
        scenario["setup"](workdir)
    saved_env = {k: os.environ.get(k) for k in _ENV_KEYS}
    saved_cwd = os.getcwd()
    with ScriptedServer(scenario["turns"]) as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        os.environ["ANTHROPIC_API_KEY"] = "offline-demo"
        os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
        os.chdir(workdir)
        print(banner(chapter, scenario["title"], workdir))
        # subtle: the scripted model cannot hear your answers, so its story assumes
        # that every question is answered "no". Make that true even in a terminal.
        saved_stdin, sys.stdin = sys.stdin, open(os.devnull)
        try:
            yield list(scenario["prompts"])
        finally:
            sys.stdin.close()
            sys.stdin = saved_stdin
            os.chdir(saved_cwd)
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    print(RULE)
    print(f"End of the scripted demo. The agent worked in {workdir}")
    print("(a scratch copy of offline/sample_project: look around, then delete it).")
    print("To go live: cp .env.example .env, set ANTHROPIC_API_KEY, run again.")


def banner(chapter: str, title: str, workdir: Path) -> str:
    return "\n".join([
        RULE,
        f"{chapter} OFFLINE DEMO: {title}",
        "No API key was found (or --offline was given), so a scripted model plays",
        "this chapter's scenario. It is served by a local scripted Messages API",
        "server and reached through the real anthropic SDK; the tools really run.",
        f"Workspace: {workdir}",
        *(["Nobody answers questions in the demo: each permission prompt gets 'no'."]
          if chapter >= "s03" else []),
        "To go live: cp .env.example .env, set ANTHROPIC_API_KEY, run again.",
        RULE,
    ])
