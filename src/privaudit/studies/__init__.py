"""privaudit.studies (under construction)."""

__all__: list[str] = []
