"""Where a test run's processor time went, by test file (issue 39).

    TEST_CPU_REPORT=/tmp/cpu.jsonl python -m pytest -n auto
    python -m tests.cpu_report /tmp/cpu.jsonl [N]

Each line of the report is one test (conftest.py writes it): processor seconds in the
test's own process and in the child processes it waited for, its runs forked warm
among them (tests/warm.py). Printed: the files by
their total, then the N costliest tests. A worker's collection and start are not in
it (they are the same for every run: `pytest --collect-only` measures them).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(path: str, top: int = 25) -> None:
    tests = [json.loads(line) for line in open(path, encoding="utf-8")]
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for t in tests:
        row = files[t["test"].split("::")[0]]
        row[0] += t["self"]
        row[1] += t["children"]
        row[2] += 1
    total = sum(t["self"] + t["children"] for t in tests)
    print(f"{len(tests)} tests, {total:.0f} processor seconds "
          f"(in the tests' processes {sum(t['self'] for t in tests):.0f}, "
          f"in their children {sum(t['children'] for t in tests):.0f})")
    print(f"{'total':>7} {'self':>6} {'kids':>6} {'tests':>5}  file")
    for name, (me, kids, n) in sorted(files.items(), key=lambda kv: -sum(kv[1][:2])):
        print(f"{me + kids:7.1f} {me:6.1f} {kids:6.1f} {n:5d}  {name}")
    print(f"\nthe {top} costliest tests")
    for t in sorted(tests, key=lambda t: -(t["self"] + t["children"]))[:top]:
        print(f"{t['self'] + t['children']:7.1f}  {t['test']}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
