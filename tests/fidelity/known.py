"""Every difference between Claude Code and the course, with its reason (filled from
the suite's runs; see README.md)."""

KNOWN: dict = {}
