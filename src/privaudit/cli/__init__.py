"""The ``privaudit`` command line.

Commands import what they need when they run, so ``privaudit --help`` starts fast and the
module stays light to import.
"""

from privaudit.cli._app import app, main

__all__ = ["app", "main"]
