"""Results of attacks: what every attack returns and every report consumes."""

from privaudit.results._attack_result import AttackResult

__all__ = ["AttackResult"]
