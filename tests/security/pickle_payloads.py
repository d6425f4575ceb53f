"""Pickles that run code when loaded, for tests proving a loader never unpickles them."""

from __future__ import annotations


class Planted:
    """Unpickling it writes a marker file: proof that code ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))
