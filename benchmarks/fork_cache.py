#!/usr/bin/env python3
"""Benchmark (not a test): what a fork's first request reads from the prompt cache.

What it measures
    s06's own loop (the real SDK, the scripted server of offline/server.py) plays a
    conversation of N exchanges (read_file on the sample project's files), then one
    `agent` call with the same directive, once as a fork (no subagent_type) and once
    as a general-purpose agent. For the child's first request it prints the input
    tokens read from the cache, written to it, and neither, and the shared-prefix
    share: read / (read + written + uncached). A cost column weighs them as the API
    prices input (a cache read 0.1, a write 1.25, plain input 1), beside what the
    same request would cost with nothing cached. (The general-purpose agent's share
    is high too: its small prompt is mostly the tools and system prompt, which the
    main agent's requests cached; the fork's is the parent's whole conversation.)

    The fork starts with the parent's whole context, so its first request grows with
    N, and all of it but the end (the reply's placeholders and its directive) is
    read from the cache the parent's request wrote. The general-purpose agent starts
    small and reads only the tools' prefix; what of the parent's context it needs, it
    must read again, uncached.

Tokens
    The scripted server's estimates (4 characters a token), not the API's tokenizer.

Usage
    python benchmarks/fork_cache.py [--exchanges 2 8 32]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "s06_concurrency"))

import anthropic

from offline.server import ScriptedServer, reply, tool_use

PRICE = {"cache_read_input_tokens": 0.1, "cache_creation_input_tokens": 1.25,
         "input_tokens": 1.0}
DIRECTIVE = "Say in one sentence whether total_value does what its docstring says."


@contextlib.contextmanager
def sample_project():
    before = Path.cwd()
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(ROOT / "offline" / "sample_project", scratch, dirs_exist_ok=True)
        os.chdir(scratch)
        try:
            yield sorted(p.name for p in Path(scratch).glob("*.py"))
        finally:
            os.chdir(before)


def child_usage(mod, exchanges: int, kind: dict) -> dict:
    """The usage of the child's first request, after `exchanges` reads."""
    with sample_project() as files, ScriptedServer() as server:
        usages, real = [], server.usage

        def record(body):
            usages.append(real(body))
            return usages[-1]
        server.usage = record
        reads = [reply(tool_use("read_file", {"file_path": files[i % len(files)]}))
                 for i in range(exchanges)]
        call = tool_use("agent", {"description": "check", "prompt": DIRECTIVE, **kind})
        server.add(*reads, reply(call), reply("It does not."), reply("done"))
        client = anthropic.Anthropic(api_key="bench", base_url=server.url,
                                     max_retries=0)
        agent = mod.Agent(client, max_turns=exchanges + 5)
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            mod.agent_loop([{"role": "user", "content": "Read the project."}], agent)
        agent.close()
        return usages[exchanges + 1]  # after N reads and the reply with the call


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, nargs="+", default=[2, 8, 32])
    args = parser.parse_args(argv)
    mod = load_s06()
    print("first request of the child, in the scripted server's estimated tokens")
    print(f"{'N':>3}  {'kind':<16}{'read':>8}{'written':>9}{'uncached':>9}"
          f"{'share':>8}{'cost':>9}{'no cache':>10}")
    for n in args.exchanges:
        for name, kind in (("fork", {}),
                           ("general-purpose", {"subagent_type": "general-purpose"})):
            u = child_usage(mod, n, kind)
            read, wrote, plain = (u.get(k) or 0 for k in PRICE)
            whole = read + wrote + plain
            cost = sum((u.get(k) or 0) * w for k, w in PRICE.items())
            print(f"{n:>3}  {name:<16}{read:>8,}{wrote:>9,}{plain:>9,}"
                  f"{read / whole:>8.2f}{cost:>9,.0f}{whole:>10,}")
    print("share = read / (read + written + uncached): the shared prefix; cost: "
          "input weighed as priced (read 0.1, write 1.25, plain 1); no cache: the "
          "same request with nothing cached")
    return 0


def load_s06():
    """s06's code.py as a module, as the tests load a chapter."""
    spec = importlib.util.spec_from_file_location(
        "s06_code", ROOT / "s06_concurrency" / "code.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


if __name__ == "__main__":
    sys.exit(main())
