"""privaudit.targets (under construction)."""

__all__: list[str] = []
