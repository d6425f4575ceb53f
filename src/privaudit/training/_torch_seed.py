"""Seeding torch for one training run: shared by the recipes and the stacked trainer.

Imports nothing of torch itself (the caller passes the module), so that importing it costs
nothing where torch is not installed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["seeded"]


@contextlib.contextmanager
def seeded(torch: Any, seed: int, num_threads: int | None) -> Iterator[None]:
    """Seed torch's global generator and fix its threads, restoring both afterwards.

    Layer initialisation draws from the global generator; forking it leaves the caller's
    random state untouched. One thread makes CPU results bit-identical whatever the
    executor (reductions split across threads round differently).
    """
    old_threads = torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        try:
            yield
        finally:
            if num_threads is not None:
                torch.set_num_threads(old_threads)
