"""Ids sort by creation time, even within one millisecond."""

from platform_api.ids import new_id


def test_ids_made_in_a_burst_sort_in_creation_order() -> None:
    ids = [new_id("x") for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_ids_carry_their_prefix_and_a_fixed_length() -> None:
    value = new_id("acct")
    assert value.startswith("acct_")
    assert len(value) == len("acct_") + 26
