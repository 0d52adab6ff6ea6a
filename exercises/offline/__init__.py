"""Lets an exercise file run its chapter's offline demo: `python exercises/s01/ex1.py`.

A chapter finds the course's `offline` package beside its own folder
(`Path(__file__).parent.parent`). For a copy in exercises/sNN/ that is exercises/, so
this stand-in points the import at the real package, the repository's offline/, and
adds its own folder, which holds each exercise's short scenario (exercises_sNN.py):
`offline.demo` plays it instead of the chapter's when an exercise file is run.
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parents[2] / "offline"),
            str(Path(__file__).resolve().parent)]
