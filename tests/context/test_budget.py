"""``BudgetReport.to_dict`` is built by hand: it must stay what ``asdict`` gave, field for field."""

from __future__ import annotations

from dataclasses import asdict, fields

from hypothesis import given
from hypothesis import strategies as st

from duragent.context.budget import BudgetReport

counters = st.fixed_dictionaries(
    {f.name: st.one_of(st.just(0), st.integers(-3, 10**9)) for f in fields(BudgetReport)}
)


@given(counters)
def test_a_report_dict_is_the_asdict_of_its_sizes_and_non_zero_counters(
    values: dict[str, int],
) -> None:
    report = BudgetReport(**values)
    keep = {"window", "limit", "request_tokens", "history_sent"}
    expected = {k: v for k, v in asdict(report).items() if k in keep or v}
    assert list(report.to_dict().items()) == list(expected.items())  # keys in the same order


def test_an_empty_report_keeps_only_its_sizes() -> None:
    assert BudgetReport().to_dict() == {
        "window": 0,
        "limit": 0,
        "request_tokens": 0,
        "history_sent": 0,
    }
