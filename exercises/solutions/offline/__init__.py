"""Lets a solution run its chapter's offline demo: `python exercises/solutions/s01/ex1.py`.

The same stand-in as exercises/offline/: a chapter looks for `offline` beside its
own folder, which for a copy in exercises/solutions/sNN/ is exercises/solutions/. The
exercises' scenarios are in exercises/offline/, shared by starters and solutions.
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parents[3] / "offline"),
            str(Path(__file__).resolve().parents[2] / "offline")]
