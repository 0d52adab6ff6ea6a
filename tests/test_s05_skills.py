"""s05's skills: names and descriptions up front, bodies on demand, broken ones reported.

Each test runs against s05 and every later chapter. The SKILL.md files below are
shaped like the ones people publish: folded and literal blocks, quotes, extra keys,
Windows line endings, a byte-order mark, and some that are broken.
"""

import anthropic
import pytest

from conftest import the_agent
from conftest import chapter_params, load_chapter, result_text, run_agent, \
    sent_tool_results
from offline.server import reply, tool_use


@pytest.fixture(params=chapter_params("s05"))
def mod(request):
    return load_chapter(request.param)


def use_skill(mod, **tool_input) -> tuple[str, bool]:
    """Call the skill tool through execute_tool (its `name` field clashes with
    call_tool's own parameter)."""
    return mod.execute_tool(anthropic.types.ToolUseBlock(
        type="tool_use", id="toolu_skill", name="skill", input=tool_input),
        the_agent(mod))


def add_skill(workspace, folder: str, text: str, crlf: bool = False, **files) -> None:
    where = workspace / ".claude" / "skills" / folder
    where.mkdir(parents=True)
    data = text.replace("\n", "\r\n") if crlf else text
    (where / "SKILL.md").write_bytes(data.encode("utf-8"))
    for name, content in files.items():
        (where / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (where / name.replace("__", "/")).write_text(content)


# A table of front matters: (id, SKILL.md text, expected name, expected description).
GOOD = [
    ("plain", "---\nname: pdf\ndescription: Fill in PDF forms.\n---\nBody.\n",
     "pdf", "Fill in PDF forms."),
    ("folded", "---\nname: review\ndescription: >\n  Review a pull request.\n  Use it when"
               " asked to review.\nlicense: MIT\n---\n# Review\n",
     "review", "Review a pull request. Use it when asked to review."),
    ("folded-strip", "---\nname: r2\ndescription: >-\n  Line one\n  line two\n---\nx\n",
     "r2", "Line one line two"),
    ("literal", "---\nname: lit\ndescription: |\n  First line.\n  Second line.\n---\nx\n",
     "lit", "First line.\nSecond line."),
    ("double-quoted", '---\nname: "quoted"\ndescription: "Say \\"hi\\": a test."\n---\nx\n',
     "quoted", 'Say "hi": a test.'),
    ("single-quoted", "---\nname: 'single'\ndescription: 'It''s fine: really'\n---\nx\n",
     "single", "It's fine: really"),
    ("quoted-multiline", '---\nname: qm\ndescription: "Starts here\n  and goes on"\n---\nx\n',
     "qm", "Starts here and goes on"),
    ("plain-multiline", "---\nname: pm\ndescription: Starts here\n  and goes on\n---\nx\n",
     "pm", "Starts here and goes on"),
    ("extra-keys", "---\nname: extra\ndescription: With extras.\nallowed-tools:\n  - Read\n"
                   "  - Grep\nmetadata:\n  version: 1.2\n  author: someone\n"
                   "license: Apache-2.0\n---\nx\n",
     "extra", "With extras."),
    ("flow-list-and-comment", "---\n# a comment\nname: flow  # trailing\nallowed-tools: "
                              "[Read, Edit]\ndescription: Flow list.\n---\nx\n",
     "flow", "Flow list."),
    ("bom", "\ufeff---\nname: bom\ndescription: Starts with a byte-order mark.\n---\nx\n",
     "bom", "Starts with a byte-order mark."),
]


@pytest.mark.parametrize("text, name, description", [g[1:] for g in GOOD],
                         ids=[g[0] for g in GOOD])
@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_front_matter_forms_load(mod, workspace, text, name, description, crlf):
    """Each form loads with its name and description, with LF or CRLF endings."""
    add_skill(workspace, "s", text, crlf=crlf)
    skills, errors = mod.find_skills()
    assert errors == []
    assert list(skills) == [name]
    found = skills[name]
    assert found["description"] == " ".join(description.split())
    assert "\r" not in found["body"]


BROKEN = [
    ("no-front-matter", "# Deploy\n\nRun ./deploy.sh\n", "front matter"),
    ("unclosed", "---\nname: u\ndescription: never closed\n# Body\n", "closing"),
    ("no-description", "---\nname: nodesc\nlicense: MIT\n---\nBody\n", "description"),
    ("unterminated-quote", '---\nname: q\ndescription: "oops\n---\nBody\n', "quote"),
    ("not-key-value", "---\nname: x\nthis is not yaml\ndescription: d\n---\nBody\n", "line"),
]


@pytest.mark.parametrize("folder, text, why", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_skill_is_reported_and_the_others_still_load(mod, workspace, folder, text, why):
    """A broken SKILL.md gives one error naming its file and the problem; a good
    skill beside it still loads."""
    add_skill(workspace, "good", GOOD[0][1])
    add_skill(workspace, folder, text)
    skills, errors = mod.find_skills()
    assert list(skills) == ["pdf"]
    [error] = errors
    assert f".claude/skills/{folder}/SKILL.md" in error and why in error


def test_name_defaults_to_the_folder(mod, workspace):
    """No name in the front matter: the folder's name, as in Claude Code."""
    add_skill(workspace, "my-skill", "---\ndescription: Unnamed.\n---\nx\n")
    skills, _ = mod.find_skills()
    assert list(skills) == ["my-skill"]


def test_no_skills_folder_is_fine(mod, workspace):
    assert mod.find_skills() == ({}, [])


# --- the skill tool ------------------------------------------------------------------------


def test_skill_returns_its_body_and_folder(mod, workspace):
    """skill(name): the body, the folder, and the files it bundles."""
    add_skill(workspace, "pdf", "---\nname: pdf\ndescription: PDFs.\n---\n# PDF\n\nRun "
              "scripts/fill.py.\n", scripts__fill_py="print('fill')\n")
    output, is_error = use_skill(mod, name="pdf")
    assert not is_error
    assert "# PDF" in output and "Run scripts/fill.py." in output
    assert ".claude/skills/pdf" in output and "scripts/fill_py" in output.replace(".", "_")
    assert "description: PDFs." not in output  # the front matter is not the body


def test_skill_args_fill_arguments_or_are_appended(mod, workspace):
    """$ARGUMENTS in the body takes the args; without it, they are appended."""
    add_skill(workspace, "a", "---\nname: a\ndescription: A.\n---\nFix issue $ARGUMENTS.\n")
    add_skill(workspace, "b", "---\nname: b\ndescription: B.\n---\nDo it.\n")
    output, _ = use_skill(mod, name="a", args="#42")
    assert "Fix issue #42." in output
    output, _ = use_skill(mod, name="b", args="carefully")
    assert "Do it." in output and "carefully" in output


def test_unknown_skill_lists_the_skills(mod, workspace):
    add_skill(workspace, "pdf", GOOD[0][1])
    output, is_error = use_skill(mod, name="excel")
    assert is_error and "excel" in output and "pdf" in output


def test_loading_a_broken_skill_says_why(mod, workspace):
    add_skill(workspace, "deploy", BROKEN[0][1])
    output, is_error = use_skill(mod, name="deploy")
    assert is_error and "front matter" in output


# --- end to end: what the model sees ----------------------------------------------------------


def test_skills_listed_up_front_and_loaded_on_demand(mod, server, client, workspace):
    """The first request lists each skill's name and description, not its body, and
    reports the broken one; the body arrives only as the skill tool's result."""
    add_skill(workspace, "changelog", "---\nname: changelog\ndescription: >\n  Write a "
              "changelog entry.\n---\nSECRET-BODY: one line per change.\n", crlf=True)
    add_skill(workspace, "deploy", BROKEN[0][1])
    server.add(reply(tool_use("skill", {"name": "changelog"})), reply("Done."))
    run_agent(mod, client, "add a changelog entry")
    first, second = server.requests
    assert "changelog: Write a changelog entry." in first["system"]
    assert ".claude/skills/deploy/SKILL.md" in first["system"]
    assert "SECRET-BODY" not in str(first)
    [result] = sent_tool_results(second)
    assert result["is_error"] is False and "SECRET-BODY" in result_text(result)
