"""privaudit's version, in a module of its own.

Every module that writes the version (results files, the report, the CLI) reads it from
here, never from the root package: ``from privaudit import __version__`` inside
:mod:`privaudit.results` made results depend on the root package, which imports every
audit, which imports results (issue 21).
"""

__version__ = "0.1.0"
