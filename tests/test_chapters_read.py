"""Every chapter reads top to bottom, and says truly what it adds.

- Every section opens with an origin banner, `# === sNN · topic: what ===`, naming the
  chapter that introduced it; a banner never changes in later chapters.
- What a chapter defines anew stands in its own sections (its banner's chapter is this
  one), except what it registers with the tools, in the registration blocks.
- Each docstring's reading map is true: "New here" names exactly this chapter's
  sections, "Changed here" exactly what it changes of the previous chapter.
- A tool is declared in one place (one register call); the session is one dict.
- Size: every function fits on a screen (40 lines); the chapters stay within their
  line budgets, and this test prints the figures.
- Width: `ruff check` passes on every chapter, lines of at most 88 columns included
  (pyproject.toml sets it up), and the exercise files made from them fit 88 columns.
- The bash classifier (bash_safety.py, s03 on) is one file, the same in every chapter
  folder; it reads top to bottom like a chapter, with a reading map of its own, and
  stays within its budget.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
import subprocess
import sys

import pytest

from conftest import CHAPTERS, ROOT, load_chapter

BANNER = re.compile(r"^# === (?P<chapter>s\d\d) · (?P<title>.+) ===$")
# Budgets, in lines of code.py: what each chapter may add to the one before it, kept
# with the site's diff summary, which shows them; and bash_safety.py's own.
# (Issue #21 set them: see the numbers this file prints.)
sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
from chapters import BASH_SAFETY_LINES  # noqa: E402
from chapters import LINES_ADDED_AT_MOST as ADDS_AT_MOST  # noqa: E402
MAX_FUNCTION_LINES = 40


MODULE = "bash_safety.py"  # the classifier, beside code.py from s03 on
MODULES = (MODULE, "sandbox.py", "rules.py",  # ... the sandbox, the rule syntax,
           "protected.py",  # the protected places, where a path leads,
           "auto_mode.py",  # auto mode's reviewer,
           "asking.py")  # the question on the terminal
LATER_MODULES = {"command_line.py": "s01",  # in every chapter: the command line's plumbing;
                 "trust.py": "s04",  # from a later chapter on: a folder's trust,
                 "mcp_client.py": "s05",  # MCP's talking,
                 "skills.py": "s05",  # a SKILL.md's front matter,
                 "background.py": "s06",  # commands kept running in the background,
                 "tasks.py": "s06",  # the session's task list,
                 "subagents.py": "s06",  # agent types, memory, a fork's first request,
                 "shared_terminal.py": "s06"}  # one terminal for many threads
MODULE_CHAPTERS = [c for c in CHAPTERS if (ROOT / c / MODULE).exists()]
FIRST = {m: "s03" for m in MODULES} | LATER_MODULES  # module -> the chapter it starts in


def module_chapters(module: str) -> list[str]:
    """The chapters that hold `module`: its first, and every one after it."""
    return [c for c in CHAPTERS if c >= FIRST[module]]


def source(chapter: str, file: str = "code.py") -> str:
    return (ROOT / chapter / file).read_text(encoding="utf-8")


def banners(chapter: str, file: str = "code.py") -> list[tuple[int, str, str]]:
    return [(i + 1, m["chapter"], m["title"])
            for i, line in enumerate(source(chapter, file).split("\n"))
            if (m := BANNER.match(line))]


@functools.lru_cache(maxsize=None)  # read-only: many tests ask for the same file's
def definitions(chapter: str, file: str = "code.py") -> dict[str, tuple[int, str]]:
    """Top-level names -> (line, source text): functions, classes, assignments, and
    each tool's register call (as `register:NAME`)."""
    text = source(chapter, file)
    lines, found = text.split("\n"), {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and getattr(node.value.func, "id", "") == "register":
            names = ["register:" + ast.unparse(node.value.args[0])]
        else:
            continue
        for name in names:
            found[name] = (node.lineno, "\n".join(lines[node.lineno - 1:node.end_lineno]))
    return found


def reading_map(chapter: str) -> dict[str, str]:
    """The docstring's reading map, by heading: {"New here": text, ...}."""
    doc = ast.get_docstring(ast.parse(source(chapter)))
    assert doc and "Reading map" in doc, f"{chapter}'s docstring has no reading map"
    text = doc.split("Reading map", 1)[1]
    parts = re.split(r"^  (New here|Changed here|Unchanged|Left for later):", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def previous(chapter: str) -> str | None:
    index = CHAPTERS.index(chapter)
    return CHAPTERS[index - 1] if index else None


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_section_has_a_banner_and_banners_never_change(chapter):
    """The file's first definition follows a banner; each banner of an earlier chapter
    stands, word for word, in the chapter that introduced it."""
    marks = banners(chapter)
    assert marks, f"{chapter} has no banners"
    first = min(line for line, _ in definitions(chapter).values())
    assert marks[0][0] < first, f"{chapter}: code before the first banner (line {first})"
    for _, origin, title in marks:
        assert origin <= chapter[:3], f"{chapter}: a banner from the future, {origin}"
        home = next(c for c in CHAPTERS if c.startswith(origin))
        assert (origin, title) in {(o, t) for _, o, t in banners(home)}, (
            f"{chapter}: the banner '{origin} · {title}' is not in {home}, which introduced it")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_new_code_stands_in_the_chapters_own_sections(chapter):
    """A name defined anew here sits under a banner of this chapter (its tools' register
    calls and the registry's own names excepted: they go in the registration blocks)."""
    prev = definitions(previous(chapter)) if previous(chapter) else {}
    marks = banners(chapter)
    misplaced = []
    for name, (line, _) in definitions(chapter).items():
        origin, title = max((m for m in marks if m[0] < line), default=(0, "", ""))[1:]
        if name not in prev and origin != chapter[:3] and not title.startswith("registration"):
            misplaced.append(f"{name} (line {line}, under a {origin} banner)")
    assert not misplaced, f"{chapter}: new code outside its own sections: {misplaced}"


@pytest.mark.parametrize("chapter", CHAPTERS[1:])
def test_reading_map_is_true(chapter):
    """"New here" lists exactly this chapter's sections; "Changed here" names exactly
    what it changes of the previous chapter (functions, classes, constants; a tool's
    registration by the word "registration")."""
    read = reading_map(chapter)
    new = {title for _, origin, title in banners(chapter) if origin == chapter[:3]}
    listed = set(re.findall(rf"{chapter[:3]} · ([^\n]+)", read.get("New here", "")))
    assert listed == new, f"{chapter}: New here lists {listed ^ new} wrongly"
    old, now = definitions(previous(chapter)), definitions(chapter)
    changed = {n for n in now if n in old and old[n][1] != now[n][1] and n != "CHAPTER"}
    claimed = set(re.findall(r"`([A-Za-z_]\w*)`", read.get("Changed here", "")))
    named = {n for n in changed if not n.startswith("register:")}
    assert claimed == named, (f"{chapter}: Changed here should name {sorted(named)}, "
                              f"names {sorted(claimed)}")
    if named != changed:  # a register call changed
        assert "registration" in read["Changed here"], f"{chapter}: say which tools' registration changed"
    for name in re.findall(r"`([A-Za-z_]\w*)`", read.get("Unchanged", "")):
        assert name not in changed, f"{chapter}: says `{name}` is unchanged; it changed"


@pytest.mark.parametrize("chapter", CHAPTERS[1:])
def test_each_tool_is_declared_in_one_place(chapter):
    """One register call per tool, and nothing patches the registry afterwards."""
    mod = load_chapter(chapter)
    text = source(chapter)
    # a handler by its name, or one a factory makes for the name (s06's task tools)
    calls = [made or named for made, named in re.findall(
        r'^register\((?:\w+\("(\w+)"\)|(\w+)),', text, flags=re.M)]
    assert sorted(calls) == sorted(t["name"] for t in mod.TOOLS)
    patches = re.findall(r"^(?:TOOLS|TOOL_HANDLERS|TOOL_META|TOOL_BY_NAME)\s*(?:\[|\+=|\.)",
                         text, flags=re.M)
    assert not patches, f"{chapter} patches a registry outside register(): {patches}"
    assert not registry_writes(text), (
        f"{chapter} writes a registry outside register()/unregister() (issue 38: one "
        f"door in, MCP tools too): {registry_writes(text)}")


REGISTRIES = {"TOOLS", "TOOL_HANDLERS", "TOOL_META", "TOOL_BY_NAME"}
DOORS = {"register", "unregister"}  # the one way in, and its way out (s05: MCP's)


def registry_writes(text: str) -> list[str]:
    """Where code outside the doors writes a registry: an item or slice assigned or
    deleted, a method that changes it (append, pop, update ...)."""
    found = []
    for func in [n for n in ast.walk(ast.parse(text))
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name not in DOORS]:
        for node in ast.walk(func):
            targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                       else [node.target] if isinstance(node, ast.AugAssign) else [])
            hit = [t for t in targets if isinstance(t, ast.Subscript)
                   and isinstance(t.value, ast.Name) and t.value.id in REGISTRIES]
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in REGISTRIES
                    and node.func.attr in {"append", "extend", "insert", "pop",
                                           "update", "setdefault", "clear", "remove"}):
                hit.append(node)
            found += [f"{func.name}: line {h.lineno}" for h in hit]
    return found


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_agent_holds_the_session(chapter):
    """What a run learns lives in its Agent, passed to the loop and the tools: two
    agents share nothing, and the module keeps no session of its own."""
    mod = load_chapter(chapter)
    one, two = mod.Agent(None), mod.Agent(None)
    one.shell, one.warned = ROOT, True
    assert two.shell is None and not two.warned
    if hasattr(one, "permissions"):  # s03 on
        one.permissions.mode = "plan"
        one.permissions.read["x"] = (1, "h")
        assert two.permissions.mode is None and not two.permissions.read
    for stray in ("SESSION", "SHELL", "WINDOW", "MCP", "HOOK_STATE", "LOADED_TOOLS",
                  "RUNNING", "reset_session"):
        assert not hasattr(mod, stray), f"{chapter} keeps {stray} outside the agent"


def added_lines(prev: str, chapter: str) -> int:
    diff = difflib.unified_diff(source(prev).split("\n"), source(chapter).split("\n"), n=0)
    return sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))


def test_line_budgets_and_function_lengths(capsys):
    """Each chapter adds no more than its budget (issue 38: by scope, no whole-file
    cap), and bash_safety.py stays within its own; no function is longer than 40 lines. The figures are printed
    (pytest -s shows them)."""
    rows, over = [], []
    for chapter in CHAPTERS:
        size = source(chapter).count("\n")  # lines, as `wc -l` counts them
        prev = previous(chapter)
        added = added_lines(prev, chapter) if prev else size
        rows.append(f"{chapter}: {size} lines, +{added}")
        budget = ADDS_AT_MOST.get(chapter[:3])
        if budget and added > budget:
            over.append(f"{chapter} adds {added} lines (budget {budget})")
    for chapter in MODULE_CHAPTERS[:1]:
        size = len(source(chapter, MODULE).rstrip("\n").split("\n"))
        rows.append(f"{MODULE}: {size} lines (budget {BASH_SAFETY_LINES})")
        over += [f"{MODULE} has {size} lines"] if size > BASH_SAFETY_LINES else []
    for chapter, file in [(c, "code.py") for c in CHAPTERS] + [
            (module_chapters(m)[0], m) for m in FIRST]:
        for node in ast.walk(ast.parse(source(chapter, file))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                over.append(f"{chapter}/{file}: {node.name} has "
                            f"{node.end_lineno - node.lineno + 1} lines")
    with capsys.disabled():
        print("\n  " + "\n  ".join(rows))
    assert not over, over


# --- width: ruff, as pyproject.toml sets it up -----------------------------------------

RUFF = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise"]


def ruff_findings(path: str, text: str, *options: str) -> list[str]:
    """What `ruff check` says of `text` as the file `path` (relative to the repository,
    so that pyproject.toml's per-file settings apply), each finding with its line."""
    run = subprocess.run([*RUFF, *options, "--stdin-filename", path], input=text,
                         cwd=ROOT, capture_output=True, text=True, encoding="utf-8")
    assert run.returncode in (0, 1), f"ruff failed to run:\n{run.stderr}"
    lines, found = text.split("\n"), []
    for finding in re.finditer(r"^(.+?):(\d+):\d+: (.+)$", run.stdout, flags=re.M):
        found.append(f"{finding[1]}:{finding[2]}: {finding[3]}\n"
                     f"    {lines[int(finding[2]) - 1]}")
    return found


@pytest.mark.parametrize("chapter, file", [(c, "code.py") for c in CHAPTERS]
                         + [(module_chapters(m)[0], m) for m in FIRST])
def test_chapter_passes_ruff_lines_fit_88_columns(chapter, file):
    """`ruff check` passes: no line over 88 columns (E501), and nothing else ruff
    checks, but the few rules the chapters break on purpose (pyproject.toml)."""
    found = ruff_findings(f"{chapter}/{file}", source(chapter, file))
    assert not found, f"ruff check {chapter}/{file}:\n" + "\n".join(found)
    # subtle: ruff counts characters; a curly quote is one character but three bytes,
    # and tools that count bytes (awk, some editors' rulers) must agree too.
    wide = [f"{chapter}/{file}:{i}: {len(line.encode())} bytes"
            for i, line in enumerate(source(chapter, file).split("\n"), 1)
            if len(line.encode()) > 88]
    assert not wide, "\n".join(wide)


def test_exercise_files_fit_88_columns():
    """Every starter and solution, made from its chapter and its patch (or kept as a
    standalone file), has no line over 88 columns: the site shows the solutions."""
    sys.path.insert(0, str(ROOT))
    from exercises.make import EXERCISES, build, patches
    files = {p.relative_to(ROOT).with_suffix(".py").as_posix(): build(p) for p in patches()}
    for kept in sorted(EXERCISES.glob("**/s[0-9][0-9]/ex[0-9]*.py")):
        if kept.with_suffix(".patch").exists():
            continue
        files[kept.relative_to(ROOT).as_posix()] = kept.read_text(encoding="utf-8")
    found = [f for path, text in files.items()
             for f in ruff_findings(path, text, "--select", "E501")]
    assert not found, "lines over 88 columns:\n" + "\n".join(found)


# --- the bash classifier: one file, carried unchanged --------------------------------

@pytest.mark.parametrize("module", list(FIRST))
def test_the_modules_are_the_same_files_in_every_chapter_from_s03(module):
    """Each chapter folder stands alone, so each holds command_line.py, each from s03
    on bash_safety.py and sandbox.py (from s05 on, mcp_client.py; in s06,
    background.py); the copies are
    the first chapter's, byte for byte (a fix goes into every one)."""
    chapters = module_chapters(module)
    holding = [c for c in CHAPTERS if (ROOT / c / module).exists()]
    assert holding == chapters, holding
    first = (ROOT / chapters[0] / module).read_bytes()
    differ = [c for c in chapters if (ROOT / c / module).read_bytes() != first]
    assert not differ, (f"{module} differs from {chapters[0]}'s in {differ}: "
                        f"copy it (cp {chapters[0]}/{module} <chapter>/)")


@pytest.mark.parametrize("module", list(FIRST))
def test_the_modules_read_top_to_bottom_with_their_own_reading_maps(module):
    """Its docstring's reading map names its sections in order, each under a banner of
    the chapter it starts in; every definition stands under one, and code.py does not
    define them again."""
    chapter = module_chapters(module)[0]
    marks = banners(chapter, module)
    doc = ast.get_docstring(ast.parse(source(chapter, module)))
    listed = re.findall(rf"^  ({chapter[:3]} · [^\n]+?)(?:  |$)",
                        doc.split("Reading map", 1)[1], re.M)
    assert listed == [f"{o} · {t}" for _, o, t in marks], listed
    assert {o for _, o, _ in marks} == {chapter[:3]}
    first = min(line for line, _ in definitions(chapter, module).values())
    assert marks[0][0] < first, f"{module}: code before its first banner"
    for c in module_chapters(module):
        again = set(definitions(c)) & set(definitions(chapter, module)) - {"is_inside"}
        assert not again, f"{c}/code.py defines {module}'s {sorted(again)} again"


@pytest.mark.parametrize("chapter", MODULE_CHAPTERS)
def test_each_chapter_uses_its_own_bash_safety(chapter):
    """Loaded as a learner runs it (as the tests do), a chapter's code.py takes the
    classifier from its own folder, never another chapter's copy."""
    mod = load_chapter(chapter)
    assert mod.is_read_only_command.__module__ == f"{chapter}.bash_safety"
    assert sys.modules[f"{chapter}.bash_safety"].__file__ == str(ROOT / chapter / MODULE)


def test_chapters_loaded_side_by_side_keep_their_own_modules():
    """Every chapter loaded into one process (as a test worker loads several): whatever
    a code.py took from a module beside it comes from its own folder's copy, a module
    of its own (`sNN_x.sandbox`), and no plain name (`sandbox`, `rules` ...) is left in
    sys.modules for the next chapter to pick up."""
    mods = {chapter: load_chapter(chapter) for chapter in reversed(CHAPTERS)}
    plain = {p.stem for c in CHAPTERS for p in (ROOT / c).glob("*.py")} - {"code"}
    for chapter, mod in mods.items():
        beside = {p.stem for p in (ROOT / chapter).glob("*.py")} - {"code"}
        taken = [(name, value.__module__) for name, value in vars(mod).items()
                 if callable(value) and getattr(value, "__module__", "").rpartition(".")[2]
                 in beside]
        assert {m.rpartition(".")[2] for _, m in taken} == beside, taken
        for name, module in taken:
            assert module.startswith(f"{chapter}."), f"{chapter}: {name} is {module}'s"
            assert sys.modules[module].__file__.startswith(str(ROOT / chapter) + "/")
            assert getattr(sys.modules[module], name) is getattr(mod, name)
    assert not plain & set(sys.modules), plain & set(sys.modules)
