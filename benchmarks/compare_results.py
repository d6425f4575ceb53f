"""Whether two runs gave the same numbers: every saved result of two results folders.

Used for issue 21 (the audit template, behaviour unchanged): ``privaudit demo --out
before`` on the older tree, ``--out after`` on this one, then ``python
benchmarks/compare_results.py before/results after/results``. Results are matched by
(result class, target, attack under its kebab-case name, dataset, generator, kind,
metric) and compared by their arrays (labels, scores, closeness values, guesses) and
counts; names renamed by issue 21 (``min_k`` -> ``min-k``) are matched, not reported.
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from typing import Any

import numpy as np

from privaudit._validation import canonical_name
from privaudit.results import load_all_results

ARRAYS = ("labels", "scores", "synthetic", "holdout", "guesses", "truth")
COUNTS = ("n_attacks", "n_success", "n_baseline", "n_control")


def match_key(result: Any) -> tuple[str, ...]:
    generator = (getattr(result, "parameters", None) or {}).get("generator", "")
    return (type(result).__name__, str(result.target), canonical_name(str(result.attack)),
            str(result.dataset), str(generator), str(getattr(result, "kind", "")),
            str(getattr(result, "metric", "")))


def digest(result: Any) -> str:
    h = hashlib.sha256()
    for name in ARRAYS:
        value = getattr(result, name, None)
        if value is not None:
            h.update(np.asarray(value, dtype=float).tobytes())
    for name in COUNTS:
        value = getattr(result, name, None)
        if value is not None:
            h.update(repr(value).encode())
    return h.hexdigest()


def digests(folder: str) -> dict[tuple[str, ...], list[str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = load_all_results(folder)
    out: dict[tuple[str, ...], list[str]] = {}
    for result in results:
        out.setdefault(match_key(result), []).append(digest(result))
    return {k: sorted(v) for k, v in out.items()}


def main(before: str, after: str) -> int:
    a, b = digests(before), digests(after)
    missing, extra = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    differ = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    print(f"{sum(map(len, a.values()))} results before, {sum(map(len, b.values()))} after; "
          f"only before: {len(missing)}, only after: {len(extra)}, different: {len(differ)}")
    for key in (missing + extra + differ)[:20]:
        print("  ", key)
    return int(bool(missing or extra or differ))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
