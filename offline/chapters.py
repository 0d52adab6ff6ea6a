"""Load a chapter's code.py as `python sNN_x/code.py` runs it, several side by side.

A learner runs a chapter as a script: its folder is on sys.path, and `from sandbox
import ...` finds the chapter's own sandbox.py. The tests, the benchmarks and the
exercise checkers load several chapters (and exercise files) into one process, and the
chapters hold modules of the same name (command_line.py in all, sandbox.py from s03 ...),
so a plain import would hand s06 the copy s03 loaded. Here each load gets its own:

    load_chapter("s03_permissions")   -> the module s03_permissions.code; its modules
                                         are s03_permissions.sandbox, ... in sys.modules
    load_file(path, "exercise_1", folder)   -> an exercise file, with the modules of the
                                         chapter `folder` as exercise_1's own copies

While one file loads, its plain imports of a sibling (`from sandbox import x`) are
answered from `folder` under a unique name; once loaded, the plain names leave
sys.modules again, so nothing leaks into the next load.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LOCK = threading.RLock()  # one load at a time: sys.modules and sys.path are shared


class _Siblings(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers `import sandbox` with `folder`/sandbox.py, loaded as `prefix`.sandbox."""

    def __init__(self, folder: Path, prefix: str):
        self.folder, self.prefix = folder, prefix
        self.own = {p.stem for p in folder.glob("*.py") if p.stem != "code"}

    def find_spec(self, fullname, path=None, target=None):
        if path is not None or fullname not in self.own:
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.folder / f"{fullname}.py", loader=self)

    def create_module(self, spec):
        # subtle: a module made with its unique name keeps it (the import system
        # sets __name__ only when it has none), so its functions' __module__ and
        # the dataclasses it defines name this copy, not the plain name.
        module = types.ModuleType(f"{self.prefix}.{spec.name}")
        sys.modules[module.__name__] = module
        return module

    def exec_module(self, module):
        # Python's own loader compiles the file, or reads it compiled from __pycache__
        # (a checker run loads the same chapter modules a hundred times)
        name, path = module.__spec__.name, self.folder / f"{module.__spec__.name}.py"
        code = importlib.machinery.SourceFileLoader(name, str(path)).get_code(name)
        exec(code, module.__dict__)


def load_file(path: Path, name: str, folder: Path, prefix: str | None = None):
    """Import the file `path` as the module `name`, its sibling imports answered from
    `folder` as modules `prefix`.X (prefix: `name`'s package, else `name`)."""
    prefix = prefix or name.rpartition(".")[0] or name
    finder = _Siblings(folder, prefix)
    with _LOCK:
        saved_path = list(sys.path)
        shadowed = {m: sys.modules.pop(m) for m in finder.own if m in sys.modules}
        sys.meta_path.insert(0, finder)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            sys.meta_path.remove(finder)
            sys.path[:] = saved_path  # an exercise file puts its chapter on sys.path
            for plain in finder.own:
                sys.modules.pop(plain, None)
            sys.modules.update(shadowed)
    return module


def load_chapter(chapter: str, root: Path = ROOT):
    """The chapter's code.py as the module `chapter`.code, loaded once a process,
    with the chapter's own modules (`chapter`.sandbox, ...)."""
    name = f"{chapter}.code"
    with _LOCK:
        if name in sys.modules:
            return sys.modules[name]
        return load_file(root / chapter / "code.py", name, root / chapter)
