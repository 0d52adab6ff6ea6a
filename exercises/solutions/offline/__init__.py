"""Lets a solution run its chapter's offline demo: `python exercises/solutions/s01/ex1.py`.

The same stand-in as exercises/offline/: a chapter looks for `offline` beside its
own folder, which for a copy in exercises/solutions/sNN/ is exercises/solutions/.
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parents[3] / "offline")]
