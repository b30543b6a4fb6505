"""Session windows end to end: a Reshuffle keeps them, early and late panes
through merges, and several session pipelines, batch and streaming. See
winmodel.py for how outputs are compared."""
import json

import apache_beam as beam
import pytest
from apache_beam.testing import test_stream  # not imported by name: pytest would collect it
from apache_beam.transforms import combiners, trigger, window
from apache_beam.utils.timestamp import Duration

from winmodel import (MAX_MS, TV, Record, element_record, keyed_input, last_pane_final, pane_record,
                      run_batch, run_streaming, timestamped, with_closing_panes)

timeout = pytest.mark.timeout(300, method="thread")


@timeout
def test_reshuffle_keeps_session_windows(job_endpoint, tmp_path):
    """A Reshuffle of session-windowed data keeps each element's window (its
    own proto-session [t, t+gap)) and timestamp, and the windowing strategy:
    a GroupByKey after it merges the sessions."""
    rows = keyed_input(3000, keys=8, span_s=900, seed=3)

    def build(p, out):
        shuffled = (timestamped(p, rows)
                    | beam.WindowInto(window.Sessions(2))
                    | beam.Reshuffle())
        _ = shuffled | "Elements" >> beam.Map(element_record) | "RecordElements" >> beam.ParDo(Record(out))
        _ = (shuffled | beam.GroupByKey()
             | beam.Map(pane_record) | "RecordPanes" >> beam.ParDo(Record(out)))

    got, want = run_batch(build, job_endpoint, tmp_path)
    elements = [r for r in want if len(r) == 3]
    assert len(elements) == 3000 and all(r[1][1] - r[1][0] == 2000 for r in elements)
    panes = [r for r in want if len(r) != 3]
    assert got == sorted(elements + last_pane_final(panes), key=json.dumps)
    assert any(p[1][1] - p[1][0] > 2000 for p in panes)  # some sessions merged


def session_events(keys):
    """Per key: two elements fire an early pane of [1,13); 20 opens [20,30);
    12 joins them into a new window [1,30), which fires early; the watermark
    passes it (on time); 24 is late and merges [1,30) into [1,34), or is
    dropped without allowed lateness. A second session at 200 fires early
    and on time, unmerged."""
    per_key = [[(1, "a"), (3, "b")], [(20, "c")], [(12, "d")], "wm35", [(24, "e")],
               [(200, "f"), (201, "g")], "wm300"]
    s = test_stream.TestStream().advance_watermark_to(0)
    for step in per_key:
        if step == "wm35":
            s = s.advance_watermark_to(35)
        elif step == "wm300":
            s = s.advance_watermark_to(300)
        else:
            s = s.add_elements([TV((k, f"{k}{v}"), t) for k in keys for t, v in step])
    return s.advance_watermark_to_infinity()


@timeout
@pytest.mark.parametrize("lateness", [0, 30])
@pytest.mark.parametrize("accumulating", [False, True], ids=["discarding", "accumulating"])
def test_session_panes_through_merges(job_endpoint, tmp_path, accumulating, lateness):
    """Early, on-time and late panes of sessions that merge after firing,
    accumulating or discarding, with and without allowed lateness. A merged
    window that is new numbers its panes afresh, and its timing follows the
    watermark, in Java's ReduceFnRunner and Python's trigger.py alike; the
    DirectRunner gives the same, but for the closing panes of EMIT_ALWAYS
    (see with_closing_panes)."""
    keys = [f"k{i}" for i in range(300)]
    mode = trigger.AccumulationMode.ACCUMULATING if accumulating else trigger.AccumulationMode.DISCARDING

    def build(p, out):
        _ = (p | session_events(keys)
             | beam.WindowInto(window.Sessions(10),
                               trigger=trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger.AfterCount(1)),
                               accumulation_mode=mode, allowed_lateness=Duration(seconds=lateness))
             | beam.GroupByKey()
             | beam.Map(pane_record)
             | beam.ParDo(Record(out)))

    got, want = run_streaming(build, job_endpoint, tmp_path)
    assert got == with_closing_panes(want, accumulating, lateness * 1000, [35000, 300000, MAX_MS])
    k0 = [p for p in want if p[0] == "k0"]
    assert {p[3] for p in k0} == ({0, 1, 2} if lateness else {0, 1})  # early, on time, late
    assert any(p[1] == [1000, 30000] and p[3] == 0 and p[6] == 0 for p in k0)  # afresh after a merge


@timeout
@pytest.mark.parametrize("gap", [1, 5, 60])
def test_session_combine(job_endpoint, tmp_path, gap):
    """Sessions of several gaps over thousands of elements, combined per key
    (sum, count, mean) and grouped: the same sessions, values and pane
    timestamps as FnApiRunner's."""
    rows = keyed_input(2500, keys=10, span_s=1200, seed=gap)

    def build(p, out):
        sessions = timestamped(p, rows) | beam.WindowInto(window.Sessions(gap))
        sums = sessions | "Sum" >> beam.CombinePerKey(sum)
        counts = sessions | "Count" >> combiners.Count.PerKey()
        means = sessions | "Mean" >> combiners.Mean.PerKey()
        for name, pc in (("sum", sums), ("count", counts), ("mean", means)):
            _ = (pc | name + "Tag" >> beam.Map(lambda kv, name=name: (kv[0], [name, kv[1]]))
                 | name + "Record" >> beam.Map(element_record) | name + "Write" >> beam.ParDo(Record(out)))

    got, want = run_batch(build, job_endpoint, tmp_path)
    assert got == want
    assert sum(r[0][1][1] for r in want if r[0][1][0] == "count") == 2500
