"""privaudit.report (under construction)."""

__all__: list[str] = []
