"""Run a chapter's real agent loop, as this user or as another (uid 65534), against a
scripted server: the helper of tests/test_s03_one_boundary.py (not a test itself).

As another user the loop runs in a process of its own, started here as that user:
`python tests/agent_as_user.py SPEC` (SPEC: JSON, see run()) plays one run;
`python tests/agent_as_user.py --serve` plays one run per line of its stdin, each in
its own folder and environment, as this process plays its runs in its own (Runner):
a Python that starts the SDK costs seconds of processor time, so the tests start one
per user, not one per run. The Python is one that user may run, with the tests'
packages on PYTHONPATH (the venv's own may live in a folder only its owner enters,
such as a pyenv under /root).
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
    mod = importlib.import_module("offline.chapters").load_chapter(spec['chapter'])
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
        if (trust := sys.modules.get(f"{spec['chapter']}.trust")) is not None:
            trust.THIS_RUN.clear()


def serve() -> None:
    """Play the runs the lines of stdin ask for ({"spec", "cwd", "env"}), one after
    the other; answer each on stdout with {"error": None} or the traceback. What the
    chapter prints goes to stderr."""
    import traceback
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # subtle: the chapter's prints must not mix with the answers
    for line in sys.stdin:
        job, error = json.loads(line), None
        os.environ.clear()
        os.environ.update(job["env"])
        try:
            os.chdir(job["cwd"])
            run(job["spec"])
        except BaseException:  # noqa: BLE001  (the test reads it)
            error = traceback.format_exc()
        sys.stdout.flush()
        answers.write(json.dumps({"error": error}) + "\n")
        answers.flush()


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
    link = {"copy_function": hard_link_or_copy, "symlinks": True}
    # the packages with their compiled files (a link keeps each source's time, so
    # Python takes them): without them every start compiled anthropic, pydantic and
    # mcp anew, ~5 processor-seconds (the runs write none: PYTHONDONTWRITEBYTECODE)
    shutil.copytree(site, mirror / "site", **link)
    for folder in [*ROOT.glob("s0*_*"), ROOT / "offline"]:
        shutil.copytree(folder, mirror / "course" / folder.name,
                        ignore=shutil.ignore_patterns("__pycache__"), **link)
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
                          **as_user(uid), capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def as_user(uid: int) -> dict:
    """Popen's arguments that run a process as user `uid`: none when that is who we
    are (only root may set its groups, even to none: an unprivileged run of the
    tests plays its own user's cases as itself)."""
    if uid == os.geteuid():
        return {}
    return {"user": uid, "group": uid, "extra_groups": []}


class Runner:
    """One process of user `uid` that plays runs (serve()), started by the first and
    kept for the next: run(spec, cwd, env) is run_as()'s, less a Python's start. A
    run that raises, or a process that died or hung (past `guard` seconds), answers
    with returncode 1, and what the chapter printed and the traceback as stderr."""

    def __init__(self, uid: int, guard: float = 300, python: str | None = None,
                 script: Path | None = None, extra: dict | None = None):
        """As python_for(uid) says, or this `python` running this copy of this
        file (`script`), with `extra` in its environment."""
        self.uid, self.guard = uid, guard
        if python is None:
            python, extra, course = python_for(uid)
            script = course / "tests" / "agent_as_user.py"
        self.python, self.script, self.extra = python, script, extra or {}
        self.proc = None
        handle, self.log = tempfile.mkstemp(prefix="agent-as-user-", suffix=".log")
        os.close(handle)

    def start(self, cwd: Path) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [self.python, str(self.script), "--serve"], cwd=cwd,
                env={"PATH": os.environ["PATH"], **self.extra,
                     "PYTHONDONTWRITEBYTECODE": "1"},
                **as_user(self.uid), text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)

    def run(self, spec: dict, cwd: Path, env: dict) -> subprocess.CompletedProcess:
        import select
        if self.proc is None or self.proc.poll() is not None:
            self.start(cwd)
        start = os.path.getsize(self.log)
        self.proc.stdin.write(json.dumps({"spec": spec, "cwd": str(cwd), "env": {
            **env, **self.extra, "PYTHONDONTWRITEBYTECODE": "1"}}) + "\n")
        self.proc.stdin.flush()
        answered = select.select([self.proc.stdout], [], [], self.guard)[0]
        line = self.proc.stdout.readline() if answered else ""  # "": it died or hung
        if not line:
            self.proc.kill()
            self.proc.wait()
        with open(self.log, "rb") as log:
            log.seek(start)
            printed = log.read().decode("utf-8", errors="replace")
        error = json.loads(line)["error"] if line else "the process died or hung"
        return subprocess.CompletedProcess(self.proc.args, int(error is not None),
                                           printed, printed + (error or ""))

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=self.guard)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        os.unlink(self.log)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve()
    else:
        run(json.loads(sys.argv[1]))
