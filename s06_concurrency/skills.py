"""skills: a SKILL.md read as Claude Code reads it (s05 on).

code.py decides the policy: where skills live (`.claude/skills/<name>/SKILL.md`),
which files a skill may show the model (inside the workspace, no Read rule denying
them), and what the model sees (each skill's name and description up front, its body
when it calls `skill`). This file reads one SKILL.md, and a first reading can skip it:
- The front matter is the YAML between two `---` lines, read by PyYAML's safe_load:
  plain data (strings, numbers, lists, mappings), never a Python object.
- Windows line endings are read as `\\n`; every way the file can be wrong is one
  SkillError that says why (PyYAML's own words, and the line in the file).
The same file stands in every chapter from s05 on.

Reading map:
  s05 · skills: a SKILL.md's front matter      parse_skill_md(): (meta, body)
"""

import yaml

# === s05 · skills: a SKILL.md's front matter ===
class SkillError(Exception):
    """A SKILL.md that cannot be loaded; the message says why."""


def parse_skill_md(text: str) -> tuple[dict, str]:
    """Split a SKILL.md into its YAML front matter (a dict) and its Markdown body."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[0].strip() != "---":
        raise SkillError("no front matter: the file must start with a line '---'")
    end = next((i for i, line in enumerate(lines[1:], 1)
                if line.rstrip() in ("---", "...")), None)
    if end is None:
        raise SkillError("the front matter has no closing '---' line")
    try:  # safe_load: plain data only, never a Python object
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as e:  # e.g. "could not find expected ':' (line 3)"
        where = getattr(e, "problem_mark", None)
        raise SkillError("the front matter is not valid YAML: "
                         f"{getattr(e, 'problem', e)}"
                         + (f" (line {where.line + 2})" if where else ""))
    if not isinstance(meta, dict):
        raise SkillError("the front matter is not a mapping of keys to values")
    return meta, "\n".join(lines[end + 1:]).strip("\n")
