"""s06: agent types from `.claude/agents/<file>.md` (subagents.py): front matter read
by PyYAML through skills.py's parse_skill_md, the body as the system prompt, one line
per bad file while the rest load, the project's type before the user's, and memory
in three scopes with the first MEMORY_LINES lines of MEMORY.md.

The loader is driven directly on files in the test's workspace and a fake home; an
agent type started through the real loop: tests/test_s06_agent_modes.py.
"""

from __future__ import annotations

from pathlib import Path

from s06_concurrency.skills import parse_skill_md
from s06_concurrency.subagents import (MEMORY_CHARS, MEMORY_LINES, AgentType,
                                       load_agent_types, memory_folder,
                                       memory_prompt)

REVIEWER = """---
name: reviewer
description: Reviews a diff for bugs.
tools: Read, Grep
model: haiku
memory: project
---
You review code. Say what is wrong, with the line.
"""


def agents(folder: Path, **files: str) -> Path:
    (folder / ".claude" / "agents").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / ".claude" / "agents" / f"{name}.md").write_text(text)
    return folder / ".claude" / "agents"


def test_a_type_is_its_front_matter_and_its_body(workspace):
    types, problems = load_agent_types([agents(workspace, reviewer=REVIEWER)],
                                       parse_skill_md)
    assert problems == []
    assert types == {"reviewer": AgentType(
        "reviewer", "Reviews a diff for bugs.",
        "You review code. Say what is wrong, with the line.", ("Read", "Grep"),
        "haiku", "project", workspace / ".claude" / "agents" / "reviewer.md")}


def test_the_name_is_the_front_matters_and_tools_may_be_a_list(workspace):
    text = "---\nname: tidy\ndescription: Tidies.\ntools: [Read, Edit, Read]\n---\nGo.\n"
    types, _ = load_agent_types([agents(workspace, other_file=text)], parse_skill_md)
    assert list(types) == ["tidy"] and types["tidy"].tools == ("Read", "Edit")
    assert types["tidy"].model is None and types["tidy"].memory is None


def test_each_bad_file_is_one_line_and_the_rest_load(workspace):
    """Claude Code skips a file with no name or description silently; the course
    says which file and why, once, and loads the others."""
    folder = agents(
        workspace, reviewer=REVIEWER,
        nodesc="---\nname: nodesc\n---\nbody\n",
        noname="---\ndescription: no name\n---\nbody\n",
        badyaml="---\nname: x\ndescription: [unclosed\n---\nbody\n",
        nofront="just a body\n",
        badmemory="---\nname: m\ndescription: d\nmemory: team\n---\nb\n",
        badname="---\nname: ../up\ndescription: d\n---\nb\n",
        reserved="---\nname: fork\ndescription: d\n---\nb\n",
        typo="---\nname: t\ndescription: d\ntool: Read\n---\nb\n",
        badtools="---\nname: u\ndescription: d\ntools: {Read: 1}\n---\nb\n")
    types, problems = load_agent_types([folder], parse_skill_md)
    assert list(types) == ["reviewer"]
    assert len(problems) == 9 and all(p.endswith("; skipped") for p in problems)
    said = dict(p.split(": ", 1) for p in problems)
    reason = {Path(path).stem: why for path, why in said.items()}
    assert "no `description`" in reason["nodesc"]
    assert "`name`" in reason["noname"] and "`name`" in reason["badname"]
    assert "not valid YAML" in reason["badyaml"] and "line" in reason["badyaml"]
    assert "no front matter" in reason["nofront"]
    assert "user, project, local" in reason["badmemory"]
    assert "starts itself" in reason["reserved"]
    assert "unknown field tool" in reason["typo"]
    assert "`tools`" in reason["badtools"]


def test_the_projects_type_wins_over_the_users(workspace, tmp_path):
    home = tmp_path / "home"
    mine = REVIEWER.replace("Reviews a diff", "My own reviewer")
    user = agents(home, reviewer=mine, solo=mine.replace("name: reviewer",
                                                        "name: solo"))
    types, problems = load_agent_types([agents(workspace, reviewer=REVIEWER), user],
                                       parse_skill_md)
    assert types["reviewer"].description == "Reviews a diff for bugs."
    assert types["solo"].description.startswith("My own reviewer")
    assert len(problems) == 1 and "already defined in" in problems[0]


def test_memory_lives_in_one_folder_per_scope(workspace, tmp_path):
    home = tmp_path / "home"
    kinds = {scope: AgentType("rev", "d", "p", memory=scope)
             for scope in ("user", "project", "local")}
    assert memory_folder(kinds["user"], workspace, home) == \
        home / ".claude" / "agent-memory" / "rev"
    assert memory_folder(kinds["project"], workspace, home) == \
        workspace / ".claude" / "agent-memory" / "rev"
    assert memory_folder(kinds["local"], workspace, home) == \
        workspace / ".claude" / "agent-memory-local" / "rev"
    assert memory_folder(AgentType("rev", "d", "p"), workspace, home) is None


def test_the_prompt_holds_the_first_lines_of_memory_md(workspace):
    folder = workspace / ".claude" / "agent-memory" / "rev"
    assert "(empty)" in memory_prompt(folder) and str(folder) in memory_prompt(folder)
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("".join(f"- note {i}\n" for i in range(1, 260)))
    text = memory_prompt(folder)
    assert f"- note {MEMORY_LINES}\n" in text and f"- note {MEMORY_LINES + 1}" not in text
    assert "has 259 lines" in text and "the 59 after line 200" in text
    (folder / "MEMORY.md").write_text("- one\n- two\n")
    assert memory_prompt(folder).endswith("## MEMORY.md\n- one\n- two")
    (folder / "MEMORY.md").write_text("x" * 10_000_000)  # one line that never ends
    text = memory_prompt(folder)
    assert len(text) < MEMORY_CHARS + 1000 and "longer than 25,000 characters" in text
