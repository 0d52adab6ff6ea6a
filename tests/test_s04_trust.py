"""s04's trust: a folder's hooks (and from s05, its MCP servers) run only once you
trust the folder; the answer is kept outside the workspace (trust.py). Each test runs
against s04 and every later chapter, through main() as a learner starts it, and is
judged by what the hook wrote, or did not."""

import json
import os
from pathlib import Path

import pytest
from conftest import chapter_params, load_chapter, run_main

from offline.server import reply, tool_use


@pytest.fixture(params=chapter_params("s04"))
def chapter(request):
    return request.param


def with_a_hook(workspace: Path) -> Path:
    """A project whose settings name a PreToolUse hook; the file it would write."""
    mark = workspace.parent / "hook-ran.txt"
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"hooks": [{"type": "command",
                                   "command": f"echo ran >> {mark}"}]}]}}))
    return mark


def keep(answers: dict) -> None:
    Path(os.environ["AGENT_COURSE_TRUST_FILE"]).write_text(json.dumps(
        {"folders": {str(k): {"trusted": v} for k, v in answers.items()}}))


def run(chapter, workspace, server):
    server.add(reply(tool_use("read_file", {"file_path": "notes.txt"})), reply("Done."))
    (workspace / "notes.txt").write_text("hello\n")
    return run_main(chapter, "read notes.txt", cwd=workspace,
                    ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)


def test_an_untrusted_folder_runs_no_hook(chapter, workspace, server):
    """No answer kept, no terminal: the hook does not run, one line says why and
    how to be asked, and the task runs; nothing is written in the workspace."""
    mark = with_a_hook(workspace)
    result = run(chapter, workspace, server)
    assert result.returncode == 0 and "Done." in result.stdout
    assert not mark.exists()
    assert f"trust: {workspace.resolve()} is not trusted yet" in result.stdout
    assert "not run: this folder is not trusted" in result.stdout  # hooks: ...
    assert sorted(p.name for p in workspace.iterdir()) == [".claude", "notes.txt"]


def test_a_trusted_folder_and_its_subfolders_run_their_hooks(chapter, workspace,
                                                             server):
    """Trust kept for a folder above the workspace covers it, as in Claude Code."""
    mark = with_a_hook(workspace)
    keep({workspace.parent.resolve(): True})
    result = run(chapter, workspace, server)
    assert "trust:" not in result.stdout
    assert mark.read_text() == "ran\n"


def test_a_no_is_kept_and_said(chapter, workspace, server):
    """A folder you said no to: its hook does not run, and the line says where the
    answer is kept (to change your mind)."""
    mark = with_a_hook(workspace)
    keep({workspace.resolve(): False})
    result = run(chapter, workspace, server)
    assert not mark.exists()
    assert (f"trust: {workspace.resolve()} is not trusted (your answer, kept in "
            f"{os.environ['AGENT_COURSE_TRUST_FILE']})") in result.stdout


def test_no_programs_no_question(chapter, workspace, server):
    """A folder whose files name no program asks nothing and says nothing."""
    result = run(chapter, workspace, server)
    assert "trust" not in result.stdout and "Done." in result.stdout


def test_the_answer_is_kept_outside_the_workspace(chapter, workspace, monkeypatch):
    """Where answers go by default: the user's config folder, never the workspace."""
    mod = load_chapter(chapter)
    trust = mod.folder_trusted.__module__
    monkeypatch.delenv("AGENT_COURSE_TRUST_FILE")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workspace.parent / "config"))
    module = __import__(trust, fromlist=["trust_file"])
    assert module.trust_file() == workspace.parent / "config" / "agent-course" / \
        "trust.json"
    assert module.record(workspace.resolve(), True) is None
    assert module.kept_answer(workspace.resolve() / "sub") is True
    assert list(workspace.iterdir()) == []
