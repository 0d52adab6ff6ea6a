"""stockroom: a small MCP server to learn with (s05's offline demo, the tests, the
deferral benchmark). It speaks MCP over stdio, written with the official SDK's
MCPServer, and stands for the shop's back office: suppliers, prices, orders.

    python offline/mcp_server.py        (an MCP client starts it; it reads stdin)

Twenty-four tools, so that deferring them matters; most only read (they say so with
the `readOnlyHint` annotation), four write (they say nothing, so they count as
writing). The data is made up and lives in memory: a write is forgotten on exit.

For the tests: with STOCKROOM_LOG set, the server appends one JSON line per event to
that file ({"started": pid}, then {"tool": name, "arguments": {...}} per call), and
with STOCKROOM_TEST_TOOLS=1 it also has `fail` (an isError result), `crash` (the
process exits mid-call), `sleep` (for timeouts), and names the Messages API would
refuse as they are: one too long once it is `mcp__stockroom__...`, and `stock.count`
and `stock_count`, both `mcp__stockroom__stock_count` once the dot becomes `_`.
"""

from __future__ import annotations

import functools
import json
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

app = MCPServer("stockroom")
READS = ToolAnnotations(readOnlyHint=True)

ITEMS = {  # name -> (supplier, unit price, lead time in days, category)
    "bolts": ("Fixings Ltd", 0.25, 2, "hardware"),
    "hinges": ("Fixings Ltd", 3.50, 3, "hardware"),
    "oak plank": ("Northwood Timber", 18.00, 7, "timber"),
    "wood glue": ("Bondex", 6.75, 4, "adhesives"),
}
SUPPLIERS = {"Fixings Ltd": ("orders@fixings.example", 4.6),
             "Northwood Timber": ("sales@northwood.example", 4.1),
             "Bondex": ("trade@bondex.example", 3.9)}
ORDERS = {"PO-1001": ("hinges", 20, "delivered"), "PO-1002": ("bolts", 500, "shipped")}
WAREHOUSES = {"main": "Unit 4, Mill Lane", "overflow": "Railway Arches 12"}


def log(**event) -> None:
    if path := os.environ.get("STOCKROOM_LOG"):
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event) + "\n")


def logged(function):
    """Log each call before it runs: the tests see what reached the server."""
    @functools.wraps(function)
    def tool(**arguments):
        log(tool=function.__name__, arguments=arguments)
        return function(**arguments)
    return tool


def item(name: str) -> tuple:
    if name not in ITEMS:
        raise ToolError(f"no item named {name!r}; items: {', '.join(ITEMS)}")
    return ITEMS[name]


def tool(read_only: bool = True):
    def add(function):
        app.tool(annotations=READS if read_only else None)(logged(function))
        return function
    return add


@tool()
def find_supplier(item_name: str) -> str:
    """Find the supplier an item is reordered from, with their contact and lead time."""
    supplier, _, days, _ = item(item_name)
    return f"{item_name}: {supplier} ({SUPPLIERS[supplier][0]}), lead time {days} days"


@tool()
def list_suppliers() -> str:
    """List every supplier and their rating."""
    return "\n".join(f"{s}: rating {r}" for s, (_, r) in SUPPLIERS.items())


@tool()
def supplier_rating(supplier: str) -> str:
    """The rating (out of 5) customers gave a supplier."""
    return f"{supplier}: {SUPPLIERS.get(supplier, ('', 'unknown'))[1]}"


@tool()
def supplier_items(supplier: str) -> str:
    """The items a supplier sells us."""
    return ", ".join(n for n, v in ITEMS.items() if v[0] == supplier) or "(none)"


@tool()
def get_price(item_name: str) -> str:
    """The current unit price of an item."""
    return f"{item_name}: {item(item_name)[1]:.2f}"


@tool()
def price_history(item_name: str) -> str:
    """The unit prices of an item over the last three quarters."""
    price = item(item_name)[1]
    return ", ".join(f"{q}: {price * f:.2f}" for q, f in (("Q1", .9), ("Q2", .95),
                                                           ("Q3", 1)))


@tool()
def lead_time(item_name: str) -> str:
    """Days between placing an order for an item and its delivery."""
    return f"{item_name}: {item(item_name)[2]} days"


@tool()
def list_categories() -> str:
    """The catalogue's categories."""
    return ", ".join(sorted({v[3] for v in ITEMS.values()}))


@tool()
def category_items(category: str) -> str:
    """The items in a catalogue category."""
    return ", ".join(n for n, v in ITEMS.items() if v[3] == category) or "(none)"


@tool()
def search_catalog(query: str) -> str:
    """Search the catalogue by words of an item's name."""
    return ", ".join(n for n in ITEMS if query.lower() in n) or "(no match)"


@tool()
def list_orders() -> str:
    """Every purchase order and its status."""
    return "\n".join(f"{o}: {q} x {i}, {s}" for o, (i, q, s) in ORDERS.items())


@tool()
def order_status(order_id: str) -> str:
    """The status of one purchase order."""
    return ORDERS[order_id][2] if order_id in ORDERS else f"no order {order_id}"


@tool()
def list_warehouses() -> str:
    """The warehouses and their addresses."""
    return "\n".join(f"{w}: {a}" for w, a in WAREHOUSES.items())


@tool()
def shipping_estimate(item_name: str, quantity: int) -> str:
    """What shipping an order of an item costs, by weight band."""
    return f"{max(5.0, quantity * item(item_name)[1] * 0.04):.2f}"


@tool()
def currency_convert(amount: float, currency: str) -> str:
    """Convert an amount in pounds to EUR or USD at today's rate."""
    rate = {"EUR": 1.17, "USD": 1.27}.get(currency.upper())
    return f"{amount * rate:.2f} {currency.upper()}" if rate else "unknown currency"


@tool()
def sales_report(month: str) -> str:
    """Units sold per item in a month (YYYY-MM)."""
    return "\n".join(f"{n}: {len(n) * 7}" for n in ITEMS)


@tool()
def top_sellers(limit: int = 3) -> str:
    """The best-selling items, most sold first."""
    return ", ".join(sorted(ITEMS, key=len, reverse=True)[:limit])


@tool()
def reorder_suggestions(threshold: int = 5) -> str:
    """Items whose stock is below a threshold, with a quantity to reorder."""
    return "oak plank: reorder 10\nwood glue: reorder 12"


@tool()
def customer_count() -> str:
    """How many customers bought from the shop this year."""
    return "212"


@tool()
def opening_hours() -> str:
    """The shop's opening hours."""
    return "Mon-Sat 8:00-17:30"


@tool(read_only=False)
def place_order(item_name: str, quantity: int) -> str:
    """Place a purchase order with the item's supplier (it spends money)."""
    supplier = item(item_name)[0]
    order = f"PO-{1001 + len(ORDERS)}"
    ORDERS[order] = (item_name, quantity, "placed")
    return f"{order}: {quantity} x {item_name} ordered from {supplier}"


@tool(read_only=False)
def cancel_order(order_id: str) -> str:
    """Cancel a purchase order that has not shipped."""
    ORDERS.pop(order_id, None)
    return f"{order_id} cancelled"


@tool(read_only=False)
def update_price(item_name: str, price: float) -> str:
    """Change an item's unit price."""
    supplier, _, days, category = item(item_name)
    ITEMS[item_name] = (supplier, price, days, category)
    return f"{item_name}: now {price:.2f}"


@tool(read_only=False)
def add_note(text: str) -> str:
    """Add a note to the back office's notice board."""
    return "noted"


if os.environ.get("STOCKROOM_TEST_TOOLS") == "1":
    @tool()
    def fail() -> str:
        """Always fails: an isError result."""
        raise ToolError("the stockroom database is locked")

    @tool()
    def crash() -> str:
        """Exits the server mid-call."""
        os._exit(3)

    @tool()
    def sleep(seconds: float) -> str:
        """Answers after `seconds`."""
        time.sleep(seconds)
        return "awake"

    @tool()
    def reconcile_stock_counts_across_every_warehouse_and_supplier() -> str:
        """Its name, as mcp__stockroom__..., is over the API's 64 characters."""
        return "reconciled"

    def stock_count() -> str:
        return f"{len(ITEMS)} items"

    for spelling in ("stock.count", "stock_count"):  # one name for the API
        app.tool(name=spelling, annotations=READS,
                 description=f"How many items we stock (this tool is {spelling}).")(
            logged(stock_count))


if __name__ == "__main__":
    log(started=os.getpid())
    app.run()
