import unittest

from inventory import catalog_price, low_stock, report, total_value

ITEMS = [
    {"name": "bolts", "price": 0.25, "qty": 400},
    {"name": "wood glue", "price": 6.75, "qty": 2},
]


class InventoryTest(unittest.TestCase):
    def test_catalog_price_sums_unit_prices(self):
        self.assertEqual(catalog_price(ITEMS), 7.0)

    def test_total_value_counts_every_unit(self):
        self.assertEqual(total_value(ITEMS), 0.25 * 400 + 6.75 * 2)

    def test_low_stock(self):
        self.assertEqual([i["name"] for i in low_stock(ITEMS)], ["wood glue"])

    def test_report_says_how_many_are_left(self):
        self.assertIn("Running low on “wood glue” (2 left)", report(ITEMS))


if __name__ == "__main__":
    unittest.main()
