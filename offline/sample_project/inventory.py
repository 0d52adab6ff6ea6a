"""Stock levels and what they are worth."""


def catalog_price(items):
    """Sum of unit prices: what one of everything costs."""
    total = 0
    for item in items:
        total += item["price"]
    return total


def total_value(items):
    """Sum of price times quantity: what the whole stock is worth."""
    total = 0
    for item in items:
        total += item["price"]
    return total


def low_stock(items, threshold=5):
    """Items with fewer than `threshold` units left."""
    return [item for item in items if item["qty"] < threshold]


def report(items):
    """A short report for the shop's morning email."""
    lines = [f"Stock value: {total_value(items):.2f}"]
    for item in low_stock(items):
        lines.append(f"Running low on “{item['name']}”")
    return "\n".join(lines)
