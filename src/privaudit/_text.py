"""Names from users' files shown safely: control characters written as escapes.

A target, attack or dataset name comes from a user's file; written as is, an ESC
sequence in it drives a terminal (clears the screen, prints a fake verdict), a C0
control breaks XML and a bidirectional override reorders a line of a model card. Each
writer escapes the characters its medium obeys instead of showing: :data:`UNPRINTABLE`
for terminals and documents, and its own pattern where the medium forbids more
(JUnit's XML).
"""

from __future__ import annotations

import re

__all__ = ["UNPRINTABLE", "escape_controls"]

#: Characters a terminal or a document obeys instead of showing: C0 and C1 controls (ESC
#: starts colour, cursor and title sequences) and the bidirectional overrides that
#: reorder a line.
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str, pattern: re.Pattern[str] = UNPRINTABLE) -> str:
    r"""``text`` with each character ``pattern`` matches written as its Python escape.

    >>> escape_controls("model\x1b[2J\rPASS\u202e")
    'model\\x1b[2J\\rPASS\\u202e'
    """
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
