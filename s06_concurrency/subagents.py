"""subagents: agent types from .claude/agents, their memory, and a fork's first
request (s06).

code.py decides the policy: which kind of child an `agent` call starts (a fresh
general-purpose agent, a fork of the caller, or an agent type, by subagent_type),
which tools and model the child gets, that a child's memory folder is writable for
it, whether it runs in the background. This file holds the parts that need no loop,
and a first reading can skip it:
- An agent type is a Markdown file, `.claude/agents/<file>.md` in the project or in
  the home folder: YAML front matter (name, description, tools, model, memory), and a
  body that is its system prompt. A project's type wins over the user's of the same
  name. A bad file is one clear line; the others load.
- memory: user, project or local. The type gets a folder of its own (MEMORY_FOLDERS)
  and the first MEMORY_LINES lines of its MEMORY.md (at most MEMORY_CHARS) in its
  prompt.
- A fork starts from its parent's last request: the same model, system and tools,
  every message the parent sent, as sent; then the parent's whole reply, its calls
  answered by placeholders (the fork's own: "you are that fork"; the others: "the
  parent runs it"), and the fork's directive. The parent's
  prompt-cache entry covers all but those two messages. A fork cannot fork again.
- What a child may call: its parent's tools, or the subset the call (or the type)
  names. A fork offers the parent's all the same (the cache), and may call only its
  subset. Whatever cannot start is an AgentError that says why; code.py makes it
  an is_error result.

Reading map:
  s06 · subagents: an agent type from its file       AgentType, AgentError,
                                                     load_agent_types(),
                                                     agent_types(), system_of(),
                                                     listing(), MODEL_ALIASES
  s06 · subagents: memory in three scopes            memory_folder(), memory_prompt(),
                                                     in_memory(): a write inside it
  s06 · subagents: a type's child                    find_type(), type_setup(),
                                                     model_of()
  s06 · subagents: a fork's first request            fork_request(), is_fork()
  s06 · subagents: what a child may call             chosen_tools(), fork_setup(),
                                                     waits_for_reply()
  s06 · subagents: the agent tool's declaration      AGENT_TOOL
"""

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path

# === s06 · subagents: an agent type from its file ===
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # a name is also a folder's name
FRESH = "general-purpose"  # a fresh agent: the prompt is all it sees
RESERVED = ("fork", FRESH)  # the kinds code.py starts by itself
MEMORY_SCOPES = ("user", "project", "local")
FIELDS = ("name", "description", "tools", "model", "memory")


class AgentError(Exception):
    """An agent call that cannot start as asked; the message says why."""


@dataclass(frozen=True)
class AgentType:
    name: str
    description: str
    prompt: str                     # the file's body: the type's system prompt
    tools: tuple | None = None      # tool names as written (Read, Grep...); None: all
    model: str | None = None        # as written (an alias or an id); None: inherit
    memory: str | None = None       # one of MEMORY_SCOPES; None: no memory
    path: Path | None = None        # the file it came from


def load_agent_types(folders: list, parse) -> tuple[dict, list]:
    """Every agent type in `folders` (earlier folders win a name), and one line per
    file that could not be loaded. parse(text) -> (front matter dict, body) raises
    with the reason when the file is not front matter and a body (code.py passes
    skills.py's parse_skill_md: the same format)."""
    types, problems = {}, []
    for folder in folders:
        for path in sorted(Path(folder).glob("*.md")):
            try:
                meta, body = parse(path.read_text(encoding="utf-8"))
                agent_type = agent_type_of(meta, body, path)
            except Exception as e:  # whatever is wrong skips this file, not the rest
                problems.append(f"{path}: {e}; skipped")
                continue
            if agent_type.name in types:
                problems.append(f"{path}: {agent_type.name!r} is already defined in "
                                f"{types[agent_type.name].path}; skipped")
            else:
                types[agent_type.name] = agent_type
    return types, problems


def agent_types(parse) -> tuple[dict, list]:
    """The agent types of the project's .claude/agents (the workspace is the current
    folder), then the user's ~/.claude/agents (the project's wins a name); and what
    could not be loaded. parse: as load_agent_types's."""
    return load_agent_types([Path.cwd() / ".claude/agents",
                             Path.home() / ".claude/agents"], parse)


def system_of(own: str | None, main, parse) -> str:
    """An agent's system prompt: a child's own, or the main agent's, main() (code.py's
    system_prompt) and the agent types it may start (parse: as agent_types's)."""
    if own is not None:
        return own
    return main() + listing(*agent_types(parse))


def listing(types: dict, problems: list) -> str:
    """What the main agent's system prompt says of the agent types ("" if none)."""
    text = ""
    if types:
        text += ("\n\nAgent types (the agent tool's subagent_type):\n" + "\n".join(
            f"- {t.name}: {t.description}" + (f" (Tools: {', '.join(t.tools)})"
                                              if t.tools is not None else "")
            for t in types.values()))
    if problems:
        text += "\n\nAgent types that could not be loaded:\n- " + "\n- ".join(problems)
    return text


MODEL_ALIASES = {"sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5",
                 "haiku": "claude-haiku-5-5"}  # a type's `model: haiku`


def agent_type_of(meta: dict, body: str, path: Path) -> AgentType:
    """An AgentType from a file's front matter and body; ValueError says what is
    wrong with it."""
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError("`name` must be letters, digits, - and _ (at most 64)")
    if name in RESERVED:
        raise ValueError(f"{name!r} is a kind of agent the course starts itself")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("no `description`: the model chooses a type by it")
    memory = meta.get("memory")
    if memory is not None and memory not in MEMORY_SCOPES:
        raise ValueError(f"`memory` must be one of {', '.join(MEMORY_SCOPES)}")
    model = meta.get("model")
    if model is not None and not isinstance(model, str):
        raise ValueError("`model` must be a model's name")
    if unknown := sorted(set(meta) - set(FIELDS)):
        raise ValueError(f"unknown field {', '.join(unknown)} (the course reads "
                         f"{', '.join(FIELDS)})")
    return AgentType(name, description.strip(), body.strip(),
                     tool_list(meta.get("tools")), model, memory, path)


def tool_list(tools) -> tuple | None:
    """`tools` as Claude Code writes it: "Read, Grep" or a YAML list; None: all."""
    if tools is None:
        return None
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise ValueError("`tools` must be tool names: a list, or one line with commas")
    return tuple(dict.fromkeys(tools))


# === s06 · subagents: memory in three scopes ===
MEMORY_FOLDERS = {  # scope -> (the root it lives under, the path below it)
    "user": ("home", ".claude/agent-memory/{name}"),
    "project": ("workspace", ".claude/agent-memory/{name}"),
    "local": ("workspace", ".claude/agent-memory-local/{name}"),
}
MEMORY_LINES = 200  # of MEMORY.md, put in the type's prompt (as Claude Code does)
MEMORY_CHARS = 25_000  # and at most this much of it
MEMORY_TOOLS = ("Read", "Write", "Edit")  # a type with memory gets them, to keep it


def memory_folder(agent_type: AgentType, workspace: Path, home: Path) -> Path | None:
    """Where the type keeps its memory (None: it has none)."""
    if agent_type.memory is None:
        return None
    root, below = MEMORY_FOLDERS[agent_type.memory]
    base = workspace if root == "workspace" else home
    return Path(base) / below.format(name=agent_type.name)


def memory_prompt(folder: Path) -> str:
    """What the type's system prompt says of its memory: where it is, and the first
    MEMORY_LINES lines of MEMORY.md (and how much was left out)."""
    try:  # at most MEMORY_CHARS: a file the agent let grow is still read at once
        with (folder / "MEMORY.md").open(encoding="utf-8", errors="replace") as f:
            head = f.read(MEMORY_CHARS + 1)
    except OSError:  # none yet: the agent writes the first
        head = ""
    lines = head[:MEMORY_CHARS].splitlines()
    text = (f"\n\n# Your memory\nYour memory folder is {folder}. Keep what you learn "
            "that will help next time in files there, one topic a file, and an "
            "index of them, one line each, in MEMORY.md.\n\n## MEMORY.md\n")
    text += "\n".join(lines[:MEMORY_LINES]) or "(empty)"
    if len(head) > MEMORY_CHARS:
        text += (f"\n\n(MEMORY.md is longer than {MEMORY_CHARS:,} characters; what "
                 "follows was left out: keep the index short.)")
    elif len(lines) > MEMORY_LINES:
        cut = len(lines) - MEMORY_LINES
        text += (f"\n\n(MEMORY.md has {len(lines)} lines; the {cut} after line "
                 f"{MEMORY_LINES} were left out: keep the index short.)")
    return text


def in_memory(folder: Path | None, target: str, leads: Path, protected) -> bool:
    """Whether `target` (a path as a file tool's call writes it, from the workspace,
    the current folder) lies inside the type's memory folder, as written and where
    its links lead (`leads`: the call's path, resolved once), and is not protected
    (protected(target)); the folder itself no link."""
    if folder is None:
        return False
    real = folder.resolve()
    written = Path(os.path.normpath(Path.cwd() / os.path.expanduser(target)))
    return (real == Path(os.path.normpath(folder)) and written.is_relative_to(real)
            and leads.is_relative_to(real) and not protected(target))


# === s06 · subagents: a type's child ===
def find_type(types: dict, kind: str) -> AgentType:
    """The agent type named `kind`; AgentError names those there are."""
    if kind not in types:
        raise AgentError(f"Agent type {kind!r} not found. Available: {FRESH}, fork"
                         + "".join(f", {n}" for n in types) + ".")
    return types[kind]


def type_setup(kind: AgentType, workspace: Path, home: Path,
               our_name) -> tuple[list | None, str, Path | None]:
    """What an agent type's child gets: the tools it names, by our names
    (our_name("Read") -> "read_file"; None: the parent's), with its memory's file
    tools; its system prompt (with memory: MEMORY.md's head, the folder made); its
    memory folder (None: none)."""
    folder = memory_folder(kind, workspace, home)
    names = None if kind.tools is None else list(dict.fromkeys(
        our_name(n) for n in kind.tools + MEMORY_TOOLS * bool(folder)))
    system = kind.prompt
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
        system += memory_prompt(folder)
    return names, system, folder


def model_of(kind: AgentType, inherited: str) -> str:
    """The type's model: an alias resolved, an id as written, else the parent's."""
    if kind.model in (None, "inherit"):
        return inherited
    return MODEL_ALIASES.get(kind.model, kind.model)


# === s06 · subagents: a fork's first request ===
FORK_TAG = "<fork-directive>"  # opens the fork's directive: a fork knows it is one
FORK_DIRECTIVE = (
    FORK_TAG + "\nYou are a fork of the agent whose conversation is above: you share "
    "its context, and you do one thing, then stop. Do not start agents; do the work "
    "with your tools. Stay in scope: other forks may be doing the work beside "
    "yours. Your final message is your report to that agent: short, plain, with the "
    "paths of any files you changed.\n</fork-directive>\n\nYour directive: {prompt}")
FORK_PLACEHOLDER = "Fork started: you are that fork."
OTHER_PLACEHOLDER = ("Not run in this fork: the agent that forked you runs this "
                     "call itself.")


class ForkError(AgentError):
    """A fork that cannot start; the message says why."""


def is_fork(messages: list) -> bool:
    """Whether this conversation is a fork's: a user message holds a directive."""
    return any(isinstance(block, dict) and block.get("type") == "text"
               and block.get("text", "").startswith(FORK_TAG)
               for message in messages if message["role"] == "user"
               and isinstance(message["content"], list)
               for block in message["content"])


def fork_request(parent: dict, call_id: str, prompt: str) -> dict:
    """The fork's first request, from `parent` (the keyword arguments of the
    parent's last model call: model, system, tools, messages, ..., and "reply": the
    content of the reply it got) and `call_id` (the id of the agent call that starts
    the fork). Every other call of that reply is answered by a placeholder."""
    if is_fork(parent["messages"]):
        raise ForkError("a fork cannot start another fork: do the work yourself, "
                        "or start a general-purpose agent.")
    # subtle: a copy. The parent's loop goes on changing its own list (and the
    # last user message, where notifications are added); the fork's must not move.
    request = {k: v for k, v in parent.items() if k != "reply"}
    messages = copy.deepcopy(parent["messages"])
    reply = copy.deepcopy(list(parent["reply"]))
    calls = [block_id(b) for b in reply if block_type(b) == "tool_use"]
    messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": i,
         "content": FORK_PLACEHOLDER if i == call_id else OTHER_PLACEHOLDER}
        for i in calls] + [
        {"type": "text", "text": FORK_DIRECTIVE.format(prompt=prompt)}]})
    return {**request, "messages": messages}


def block_type(block) -> str:
    """A content block's type: the SDK's objects and plain dicts alike."""
    return block["type"] if isinstance(block, dict) else block.type


def block_id(block) -> str:
    return block["id"] if isinstance(block, dict) else block.id


# === s06 · subagents: what a child may call ===
def chosen_tools(offered: list, names: list | None) -> list:
    """The schemas a child gets: all `offered` (its parent's), or the named subset
    of them, each once; AgentError for a name that is not offered."""
    if names is None:
        return offered
    if not all(isinstance(n, str) for n in names):
        raise AgentError("`tools` must be a list of tool names.")
    available = {t["name"]: t for t in offered}
    if unknown := [n for n in names if n not in available]:
        raise AgentError(f"a subagent cannot have {', '.join(map(str, unknown))}; "
                         f"choose from: {', '.join(available)}.")
    return [available[n] for n in dict.fromkeys(names)]


def fork_setup(last: dict | None, call_id: str | None, prompt: str,
               names: list | None, allowed: list | None) -> tuple[dict, list | None]:
    """A fork's first request (fork_request: from `last`, the parent's last request
    and reply) and the tools it may call: the parent's (`allowed`), or those `names`
    picks. Its request offers the parent's tools all the same, or the cache misses."""
    if last is None or call_id is None:
        raise ForkError("a fork starts from a conversation, and there is none here.")
    request = fork_request(last, call_id, prompt)
    if names is not None:
        allowed = [t["name"] for t in chosen_tools(request["tools"], names)]
    return request, allowed


def waits_for_reply(block) -> bool:
    """A fork's call: it repeats the whole reply, so it starts once the reply ends."""
    return (block.name == "agent" and isinstance(block.input, dict)
            and block.input.get("subagent_type") in (None, "fork"))


# === s06 · subagents: the agent tool's declaration ===
AGENT_TOOL = (  # code.py's register(agent, *AGENT_TOOL, ...): description, fields
    ("Hand a sub-task to a child agent. No subagent_type (or \"fork\"): a fork of "
     "you, which sees this whole conversation and does the directive in `prompt` (a "
     "fork cannot fork). \"general-purpose\": a fresh agent that sees only "
     "`prompt`. A name from the system prompt's agent types: that agent. It uses "
     "your tools (or only those named in `tools`) and returns its final answer; "
     "with run_in_background, its id at once and its answer later. Several agent "
     "calls in one reply run in parallel."),
    {"description": (str, "3-5 words, shown to the user."),
     "prompt": (str, "The task; a fork's directive, or all a fresh agent sees."),
     "subagent_type": (str, "fork (the default), general-purpose, or a type."),
     "run_in_background": (bool, ("Answer at once with an id; you are told when it "
                                  "ends; task_stop stops it.")),
     "tools": ({"type": "array", "items": {"type": "string"}},
               "The tool names it may call (default: all of yours).")},
    ["description", "prompt"])
