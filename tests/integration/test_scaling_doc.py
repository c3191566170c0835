"""docs/scaling.md is what the measurement says: its figures are measured again here, on the local
stack, and the document must be what those figures render."""

from __future__ import annotations

import pytest
from scripts.scaling import DOC, Cost, dollars_per_1000, item_size, measure, out_of_date

pytestmark = pytest.mark.e2e


def test_the_scaling_document_matches_a_fresh_measurement():
    figures = measure()
    assert out_of_date(figures, DOC.read_text()) == []
    # a turn is five DynamoDB requests (the fifth: its outbox, put before the first post) and two
    # Lambda invocations, the figure the bench reports
    assert sum(figures.plain_turn.dynamodb.values()) == 5
    assert figures.plain_turn.invocations == {"RelayFunction": 1, "TurnFunction": 1}
    # a full memory costs more reads than an empty one, and stays far below DynamoDB's item limit
    assert figures.turn_at_the_limits.read_units > figures.plain_turn.read_units
    assert max(figures.largest_items.values()) < 400 * 1024


def test_a_document_whose_figures_were_edited_is_out_of_date():
    text = DOC.read_text()
    edited = text.replace('"Query": 1,', '"Query": 2,', 1)
    assert edited != text
    assert "the text is not what its figures render" in out_of_date_against_itself(edited)


def out_of_date_against_itself(text: str) -> list[str]:
    from scripts.scaling import _figures, documented_figures

    return out_of_date(_figures(documented_figures(text)), text)


@pytest.mark.parametrize(
    ("item", "size"),
    [
        ({"pk": {"S": "STM#1"}}, 2 + 5),
        ({"n": {"N": "12345"}}, 1 + 4),
        ({"flag": {"BOOL": True}}, 4 + 1),
        ({"m": {"M": {"a": {"S": "xy"}}}}, 1 + 3 + 1 + 1 + 2),
        ({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}, 1 + 3 + (1 + 2) + (1 + 2)),
    ],
)
def test_item_sizes_follow_dynamodbs_rules(item, size):
    assert item_size(item) == size


def test_dollars_follow_the_units_and_the_prices():
    cost = Cost(read_units=8_000_000, write_units=0, invocations={}, sqs={})
    assert dollars_per_1000(cost, turn_seconds=1)["DynamoDB"] == pytest.approx(1000 * 8 * 0.125)
