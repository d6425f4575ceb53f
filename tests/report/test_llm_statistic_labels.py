"""The LLM section names statistics the same whether a result carries the kebab-case name
(issue 21) or the name an older release saved it under."""

import pytest

from privaudit.report._sections_llm import STATISTIC_LABELS, statistic_label


@pytest.mark.parametrize(("new", "old", "label"), [
    ("min-k", "min_k", "Min-K%"),
    ("min-k-plus-plus", "min_k_plus_plus", "Min-K%++"),
    ("dc-pdd", "dc_pdd", "DC-PDD"),
])
def test_old_and_new_names_get_the_same_label(new, old, label):
    assert statistic_label(new) == statistic_label(old) == label


def test_every_statistic_of_the_audit_has_a_label():
    from privaudit.audits import LLM_STATISTICS

    assert set(LLM_STATISTICS) <= set(STATISTIC_LABELS)
    assert statistic_label("something-else") == "something-else"
