"""parallelism.causal_attention_shares: each context-parallel rank's share of a sequence's causal attention, against
a count of the (query, key) pairs the causal mask keeps, token by token."""

import numpy as np
import pytest

from course_lib.parallelism import CONTEXT_SPLITS, causal_attention_shares


def counted_shares(c, split, tokens=4096):
    """Count the kept (query, key ≤ query) pairs of each rank's query tokens, the chunks as ``split`` deals them."""
    chunks = c if split == "contiguous" else 2 * c
    size = tokens // chunks
    owner = np.repeat([r if split == "contiguous" or r < c else 2 * c - 1 - r for r in range(chunks)], size)
    keys_seen = np.arange(tokens) + 1.0  # query i attends to keys 0..i
    return [keys_seen[owner == r].sum() / keys_seen.sum() for r in range(c)]


@pytest.mark.parametrize("c", [1, 2, 4, 16])
@pytest.mark.parametrize("split", CONTEXT_SPLITS)
def test_shares_are_the_counted_causal_pairs(c, split):
    # The count keeps each diagonal block's own diagonal, n(n + 1)/2 pairs against the formula's n²/2: 1/chunk size.
    assert causal_attention_shares(c, split) == pytest.approx(counted_shares(c, split), abs=2e-3)
    assert sum(causal_attention_shares(c, split)) == pytest.approx(1.0)


def test_the_contiguous_split_overloads_the_last_rank_and_the_zigzag_split_does_not():
    assert max(causal_attention_shares(16, "contiguous")) * 16 == pytest.approx(2 - 1 / 16)
    assert set(causal_attention_shares(16, "zigzag")) == {1 / 16}


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="context_parallel"):
        causal_attention_shares(0)
    with pytest.raises(ValueError, match="split"):
        causal_attention_shares(4, "striped")
    with pytest.raises(ValueError, match="context_parallel must be one count"):
        causal_attention_shares(np.array([2, 4]))
