"""Print the stock report for stock.json."""

import json
from pathlib import Path

from inventory import report

if __name__ == "__main__":
    items = json.loads((Path(__file__).parent / "stock.json").read_text())
    print(report(items))
