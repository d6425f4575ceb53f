"""privaudit.attacks (under construction)."""

__all__: list[str] = []
