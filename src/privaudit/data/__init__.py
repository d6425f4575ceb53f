"""privaudit.data (under construction)."""

__all__: list[str] = []
