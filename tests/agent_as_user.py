"""Run a chapter's real agent loop, as this user or as another (uid 65534), against a
scripted server: the helper of tests/test_s03_one_boundary.py (not a test itself).

As another user the loop runs in a process of its own, started here as that user:
`python tests/agent_as_user.py SPEC` (SPEC: JSON, see run()). The Python is one that
user may run, with the tests' packages on PYTHONPATH (the venv's own may live in a
folder only its owner enters, such as a pyenv under /root).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534


def swap_after_gate(mod, folder: str, target: str) -> None:
    """Once the gate has let a write_file call through, and before it writes, swap
    the folder `folder` for a link to `target`: the race a background command runs,
    made certain (each call checks, then the swap, then the write)."""
    gate = mod.check_permission

    def gate_then_swap(call, *rest):
        denied = gate(call, *rest)
        if call.name == "write_file" and not denied and not os.path.islink(folder):
            os.rename(folder, folder + ".real")
            os.symlink(target, folder)
        return denied
    mod.check_permission = gate_then_swap


def run(spec: dict) -> None:
    """spec: {"chapter", "url" (the scripted server), "mode", "swap": [folder,
    target] or None}; run in the current folder, which is the workspace."""
    import anthropic
    sys.path.insert(0, str(ROOT))
    mod = importlib.import_module(f"{spec['chapter']}.code")
    agent = mod.Agent(anthropic.Anthropic(api_key="test-key", base_url=spec["url"],
                                          max_retries=0))
    agent.permissions.mode = spec["mode"]
    gate = mod.check_permission
    if spec.get("swap"):
        swap_after_gate(mod, *spec["swap"])
    try:
        mod.agent_loop([{"role": "user", "content": "go"}], agent)
    finally:
        mod.check_permission = gate
        if hasattr(agent, "close"):
            agent.close()  # s06: no background command outlives the run


def enters(uid: int, path) -> bool:
    """May user `uid` read `path` (and every folder on its way)?"""
    reach = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    return subprocess.run(reach + ["test", "-r", str(path)], check=False).returncode == 0


@functools.cache
def python_for(uid: int) -> tuple[str, dict, Path] | None:
    """A Python that user `uid` may run, the environment that gives it the tests'
    packages, and a copy of the course it may read: the course's own folders where
    that user may enter them, else a mirror under /var/tmp (a clone in `mktemp -d`
    is root's alone, and so is its venv). None if there is no Python of this version
    that user may run."""
    site = Path(sysconfig.get_paths()["purelib"])
    if enters(uid, sys.executable) and enters(uid, site / "anthropic") and \
            enters(uid, Path(__file__)):
        return sys.executable, {}, ROOT
    system = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    same = system and subprocess.run(
        [system, "-c", "import sys; print(sys.version_info[:2])"], text=True,
        capture_output=True).stdout.strip() == str(sys.version_info[:2])
    if not same:
        return None
    if enters(uid, site / "anthropic") and enters(uid, Path(__file__)):
        return system, {"PYTHONPATH": str(site)}, ROOT
    mirror = Path(tempfile.mkdtemp(prefix="agent-course-mirror-", dir="/var/tmp"))
    mirror.chmod(0o755)
    atexit.register(shutil.rmtree, mirror, True)
    link = {"copy_function": hard_link_or_copy, "symlinks": True,
            "ignore": shutil.ignore_patterns("__pycache__")}
    shutil.copytree(site, mirror / "site", **link)
    for folder in [*ROOT.glob("s0*_*"), ROOT / "offline"]:
        shutil.copytree(folder, mirror / "course" / folder.name, **link)
    (mirror / "course" / "tests").mkdir()
    shutil.copy(__file__, mirror / "course" / "tests")
    return system, {"PYTHONPATH": str(mirror / "site")}, mirror / "course"


def hard_link_or_copy(source: str, target: str) -> None:
    """A hard link (free, on the same disk), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def run_as(uid: int, spec: dict, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """run(spec) in a process of user `uid`, in `cwd`, with the environment `env`."""
    python, extra, course = python_for(uid)
    return subprocess.run([python, str(course / "tests" / "agent_as_user.py"),
                           json.dumps(spec)], cwd=cwd,
                          env={**env, **extra, "PYTHONDONTWRITEBYTECODE": "1"},
                          user=uid, group=uid, extra_groups=[],
                          capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
