"""privaudit.attacks.membership (under construction)."""

__all__: list[str] = []
