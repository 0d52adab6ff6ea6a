"""Checker for exercise s05 ex2 (core): a skill's bundled files.

    pytest exercises/s05/test_ex2.py

It calls your `bundled_file` directly, then the skill tool with and without `file`:
the file's text comes back, paths are taken inside the skill's folder, anything that
leads outside it is refused, and the schema lets the model send `file`.
"""

import os
from pathlib import Path

from exercises.conftest import blocks, call_tool, result_text, run_agent
from offline.server import reply, tool_use

FOLDER = ".claude/skills/changelog"
SKILL_MD = """---
name: changelog
description: Write a CHANGELOG.md entry the way this project does it.
---
# Changelog entries
1. Read `examples.md` in this skill's folder.
2. Fill in `templates/entry.md`.
"""
EXAMPLES = "## 1.2.0\n- Fixed: the stock value ignored the quantity.\n"
ENTRY = "## <version>\n- <Added|Fixed|Changed>: <what, for the user>\n"


def make_skills():
    folder = Path(FOLDER)
    (folder / "templates").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD)
    (folder / "examples.md").write_text(EXAMPLES)
    (folder / "templates" / "entry.md").write_text(ENTRY)
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + bytes(100))
    other = Path(".claude/skills/secrets")
    other.mkdir(parents=True)
    (other / "SKILL.md").write_text("---\ndescription: not yours\n---\nsecret body\n")
    Path("outside.txt").write_text("a file of the project, not of the skill\n")


def test_bundled_file_returns_the_text(mod):
    """bundled_file(folder, path) returns the file's text, also from a subfolder."""
    make_skills()
    got = mod.bundled_file(FOLDER, "examples.md")
    assert got == EXAMPLES, f"bundled_file({FOLDER!r}, 'examples.md') returned {got!r}"
    got = mod.bundled_file(FOLDER, "templates/entry.md")
    assert got == ENTRY, f"bundled_file({FOLDER!r}, 'templates/entry.md') returned {got!r}"


def test_nothing_outside_the_skill_folder(mod):
    """`..`, an absolute path, a symbolic link that leads out: refused as outside."""
    make_skills()
    os.symlink(Path("outside.txt").resolve(), Path(FOLDER) / "link.md")
    for file in ("../secrets/SKILL.md", "../../../outside.txt", str(Path("outside.txt").resolve()),
                 "link.md"):
        try:
            got = mod.bundled_file(FOLDER, file)
        except mod.ToolError as e:
            assert "outside" in str(e), f"bundled_file refused {file!r}, but say it is outside the skill's folder: {e}"
            continue
        raise AssertionError(
            f"bundled_file({FOLDER!r}, {file!r}) returned {got[:60]!r}: it leads outside the "
            "skill's folder. Resolve the path (`..` and links) and refuse it unless it stays "
            "inside the folder.")


def test_missing_and_binary_files_are_errors(mod):
    """No such file: a ToolError listing the skill's files. A binary file: refused."""
    make_skills()
    try:
        mod.bundled_file(FOLDER, "example.md")
        raise AssertionError("bundled_file returned something for a file that does not exist")
    except mod.ToolError as e:
        assert "examples.md" in str(e) and "templates/entry.md" in str(e), (
            f"for a missing file, list the files the skill has, so the model can pick one: {e}")
    try:
        mod.bundled_file(FOLDER, "logo.png")
        raise AssertionError("bundled_file returned the bytes of a binary file; refuse it")
    except mod.ToolError as e:
        assert "binary" in str(e), f"say that the file is binary: {e}"


def test_schema_has_the_field(mod):
    """skill's input_schema lists `file`, a string, and does not require it."""
    schema = {t["name"]: t for t in mod.TOOLS}["skill"]["input_schema"]
    field = schema["properties"].get("file")
    assert field is not None, (
        "skill's input_schema has no `file` property: add it, or validate_input refuses "
        "the field and the model never knows it can send it.")
    assert field.get("type") == "string", f"`file` should be a string: {field}"
    assert schema.get("required") == ["name"], f"only `name` is required: {schema.get('required')}"


def test_the_skill_tool_hands_out_files(mod):
    """skill(name, file=...) returns the file; skill(name) still returns the instructions."""
    make_skills()
    output, is_error = call_tool(mod, "skill", name="changelog", file="templates/entry.md")
    assert not is_error, f"skill(name='changelog', file='templates/entry.md') failed: {output}"
    want = f"Skill 'changelog', file templates/entry.md:\n\n{ENTRY}"
    assert output == want, f"skill(..., file=...) returned\n{output!r}\nbut should return\n{want!r}"
    output, is_error = call_tool(mod, "skill", name="changelog", file="../secrets/SKILL.md")
    assert is_error and "outside" in output and "secret body" not in output, (
        f"a file of another skill must be refused: {output!r}")
    output, is_error = call_tool(mod, "skill", name="changelog")
    assert not is_error and "Fill in `templates/entry.md`" in output, (
        f"without `file`, skill should return the instructions as before: {output[:200]!r}")


def test_the_model_reads_a_bundled_file(mod, server, client):
    """Through the loop: load the skill, then one of its files, by its path in the folder."""
    make_skills()
    server.add(reply(tool_use("skill", {"name": "changelog"})),
               reply(tool_use("skill", {"name": "changelog", "file": "examples.md"})),
               reply("Entry written."))
    _, final = run_agent(mod, client, "add a changelog entry")
    result = blocks(server.requests[2]["messages"][-1])[0]
    assert not result.get("is_error") and EXAMPLES in result_text(result), (
        f"the tool_result for skill(file='examples.md') was: {result_text(result)[:300]!r}")
    assert final == "Entry written."
