"""A custom merging WindowFn of its own window type whose merges are
partial (ownerwin.py), at 100,000 elements through a CoGroupByKey, in
batch and streaming (TestStream): the groups, windows and panes equal a
direct evaluation of the WindowFn. In batch the whole input is one merge
request, large enough that the runner splits the merge bundle and its
answer comes back in parts. 1M elements: run ownerwin.py by hand."""
import pytest

import ownerwin

timeout = pytest.mark.timeout(600, method="thread")
ELEMENTS, KEYS, IDS = 100_000, 50, 20


@pytest.fixture(scope="module")
def rows_and_want():
    rows = ownerwin.make_input(ELEMENTS, KEYS, IDS, seed=3)
    return rows, ownerwin.direct_evaluation(rows)


@timeout
@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_owner_windows_at_scale(job_endpoint, tmp_path, rows_and_want, mode):
    rows, want = rows_and_want
    got = ownerwin.run(job_endpoint, rows, str(tmp_path), mode)
    assert len(got) == len(want)
    assert got == want
    # Both kinds of windows are there: merges took place, and some windows
    # were left alone.
    assert sum(1 for r in want if r[1][4]) == KEYS * IDS
    assert len(want) > 2 * KEYS * IDS
