"""A small in-memory inventory with an LRU cache of price lookups."""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class Item:
    sku: str
    name: str
    price: float = 0.0
    tags: list[str] = field(default_factory=list)


class Inventory:
    """Items by SKU; `cheapest` results are cached (least recently used first out)."""

    def __init__(self, capacity: int = 128) -> None:
        self.items: dict[str, Item] = {}
        self._cache = OrderedDict()
        self.capacity = capacity

    def add(self, item: Item) -> None:
        if item.sku in self.items:
            raise KeyError(f"duplicate SKU {item.sku!r}")
        self.items[item.sku] = item
        self._cache.clear()  # prices changed

    def cheapest(self, tag: str, limit: int = 3) -> list[Item]:
        key = (tag, limit)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        found = sorted(
            (item for item in self.items.values() if tag in item.tags),
            key=lambda item: (item.price, item.sku),
        )[:limit]
        self._cache[key] = found
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        return found

    def load(self, path: str) -> int:
        try:
            with open(path, encoding="utf-8") as f:
                rows = json.load(f)
        except (OSError, ValueError) as e:
            print("could not load", path, e)
            return -1
        count = 0
        for row in rows:
            if not row.get("sku"):
                continue
            self.add(Item(row["sku"], row.get("name", ""), float(row["price"]), row.get("tags", [])))
            count += 1
        return count

def total_value(inventory: Inventory, *, discount: float = 0.0) -> float:
    prices = [item.price * (1 - discount) for item in inventory.items.values()]
    return round(sum(prices), 2) if prices else 0.0


if __name__ == "__main__":
    inv = Inventory(capacity=2)
    inv.add(Item("a1", "pencil", 0.5, ["office", "school"]))
    inv.add(Item("b2", "stapler", 7.25, ["office"]))
    print([item.name for item in inv.cheapest("office")], total_value(inv, discount=0.1))
