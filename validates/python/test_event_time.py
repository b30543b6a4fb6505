"""Event time: timestamp combiners (with elements re-timestamped by user
code), lateness and per-window deduplication. See winmodel.py for how
outputs are compared."""
import json
import random

import apache_beam as beam
import pytest
from apache_beam.testing import test_stream  # not imported by name: pytest would collect it
from apache_beam.transforms import trigger, window
from apache_beam.transforms.deduplicate import Deduplicate, DeduplicatePerKey
from apache_beam.utils.timestamp import Duration

from winmodel import (MAX_MS, TV, Record, element_record, keyed_input, last_pane_final, millis,
                      pane_record, run_batch, run_streaming, timestamped, with_closing_panes)

timeout = pytest.mark.timeout(300, method="thread")
TC = window.TimestampCombiner
COMBINERS = {"earliest": TC.OUTPUT_AT_EARLIEST, "latest": TC.OUTPUT_AT_LATEST, "end-of-window": TC.OUTPUT_AT_EOW}
WINDOW_FNS = {"fixed": lambda: window.FixedWindows(10), "sliding": lambda: window.SlidingWindows(30, 10),
              "sessions": lambda: window.Sessions(3)}


def shift(kv, t=beam.DoFn.TimestampParam):
    """Re-timestamps an element by -2..+2 s: Python assigns the moved
    element its windows again, with the PCollection's WindowFn."""
    return TV(kv, t + (kv[1] % 5 - 2))


@timeout
@pytest.mark.parametrize("wf", sorted(WINDOW_FNS))
@pytest.mark.parametrize("combiner", sorted(COMBINERS))
def test_timestamp_combiner(job_endpoint, tmp_path, combiner, wf):
    """Each TimestampCombiner gives the pane timestamps FnApiRunner gives,
    in fixed, sliding and session windows, over elements a Map moved in time
    before the GroupByKey."""
    # Python writes a negative microsecond time in milliseconds rounding
    # toward zero, so FnApiRunner's end-of-window time of a window ending at
    # 0 reaches the next stage as 0, not -1: times stay positive here.
    rows = [(k, v, t + 10) for k, v, t in keyed_input(2000, keys=5, span_s=300, seed=4)]

    def build(p, out):
        _ = (timestamped(p, rows)
             | beam.WindowInto(WINDOW_FNS[wf](), timestamp_combiner=COMBINERS[combiner])
             | beam.Map(shift)
             | beam.GroupByKey()
             | beam.Map(pane_record)
             | beam.ParDo(Record(out)))

    got, want = run_batch(build, job_endpoint, tmp_path)
    assert got == last_pane_final(want)
    if combiner != "end-of-window":  # timestamps come from the elements
        assert any(p[8] != p[1][1] - 1 for p in want)


def combiner_events(keys):
    """Per key, in [0,10): two early panes of two elements each, a third
    after the watermark moved, the on-time pane, a late element. Values
    carry their timestamps."""
    s = test_stream.TestStream().advance_watermark_to(0)
    for step in [[5, 3], [7, 8], "wm6", [9, 6.5], "wm12", [2]]:
        if isinstance(step, str):
            s = s.advance_watermark_to(int(step[2:]))
        else:
            s = s.add_elements([TV((k, f"{k}@{t}"), t) for k in keys for t in step])
    return s.advance_watermark_to_infinity()


def model_pane_times(panes, combiner, accumulating):
    """The pane timestamps of Beam's model: OutputTime EARLIEST_IN_PANE and
    LATEST_IN_PANE are "the earliest (latest) timestamp of the input
    elements since the last output" (beam_runner_api.proto), the end of the
    window when there are none, as Java's WatermarkHold.extractAndRelease
    gives; late elements count as none (they hold no watermark). Python's
    GeneralTriggerDriver keeps its hold across the panes before the window's
    end instead, so its early and on-time panes carry the combined time of
    all elements so far."""
    out, seen = [], {}
    for p in sorted(panes, key=lambda p: (p[0], p[1], p[6])):
        key = json.dumps(p[:2])
        new = [v for v in p[2] if not (accumulating and v in seen.get(key, ()))]
        seen[key] = set(p[2])
        times = [millis(float(v.split("@")[1])) for v in new]
        end = p[1][1] - 1
        if times and p[3] != 2 and combiner != "end-of-window":
            p = p[:8] + [min(times) if combiner == "earliest" else max(times)]
        else:
            p = p[:8] + [end]
        out.append(p)
    return out


@timeout
@pytest.mark.parametrize("accumulating", [False, True], ids=["discarding", "accumulating"])
@pytest.mark.parametrize("combiner", sorted(COMBINERS))
def test_timestamp_combiner_panes(job_endpoint, tmp_path, combiner, accumulating):
    """Early, on-time and late panes each carry the timestamp combined from
    their own new elements, by Beam's model (see model_pane_times); the
    DirectRunner gives the same panes otherwise."""
    keys = [f"k{i}" for i in range(200)]
    mode = trigger.AccumulationMode.ACCUMULATING if accumulating else trigger.AccumulationMode.DISCARDING

    def build(p, out):
        _ = (p | combiner_events(keys)
             | beam.WindowInto(window.FixedWindows(10), timestamp_combiner=COMBINERS[combiner],
                               trigger=trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger.AfterCount(1)),
                               accumulation_mode=mode, allowed_lateness=Duration(seconds=30))
             | beam.GroupByKey()
             | beam.Map(pane_record)
             | beam.ParDo(Record(out)))

    got, want = run_streaming(build, job_endpoint, tmp_path)
    want = with_closing_panes(model_pane_times(want, combiner, accumulating), accumulating, 30000, [6000, 12000, MAX_MS])
    assert got == want
    assert [p[8] for p in sorted(want, key=lambda p: p[6]) if p[0] == "k0"][:3] == {
        "earliest": [3000, 7000, 6500], "latest": [5000, 8000, 9000], "end-of-window": [9999] * 3}[combiner]


def lateness_events(keys):
    """Per key: on-time elements of [0,10) and [20,30); the watermark
    passes [0,10); a late element within the allowed lateness (20 s); at
    watermark 25, an element of [10,20), a window the watermark passed
    before it had any; the watermark reaches 30, where [0,10) expires (its
    max timestamp 9.999 plus 20 s is behind it); an element of [0,10) then,
    another at 31."""
    s = test_stream.TestStream().advance_watermark_to(0)
    steps = [[("a", 1), ("b", 5), ("c", 25)], 12, [("d", 3)], 25, [("e", 15)], 30, [("x", 7)], 31, [("y", 8)]]
    for step in steps:
        if isinstance(step, int):
            s = s.advance_watermark_to(step)
        else:
            s = s.add_elements([TV((k, k + v), t) for k in keys for v, t in step])
    return s.advance_watermark_to_infinity()


@timeout
def test_lateness(job_endpoint, tmp_path):
    """Data within the allowed lateness fires late panes; data behind the
    watermark by more is dropped, also at the boundary: Java's LateDataUtils
    expires a window once its max timestamp plus the allowed lateness is
    behind the watermark, so [0,10) with 20 s is expired at watermark 30.
    Python's trigger.py compares the window's end instead (10 + 20 is not
    behind 30) and takes the element x there; the model drops it. A second
    GroupByKey, of the same windowing, receives the late panes as late
    panes: the first holds its output watermark for them."""
    keys = [f"k{i}" for i in range(300)]

    def build(p, out):
        panes = (p | lateness_events(keys)
                 | beam.WindowInto(window.FixedWindows(10), allowed_lateness=Duration(seconds=20))
                 | "First" >> beam.GroupByKey())
        _ = panes | "FirstRecord" >> beam.Map(pane_record) | "FirstWrite" >> beam.ParDo(Record(out))
        # Only non-empty panes go on: the DirectRunner has no closing panes.
        _ = (panes | beam.Filter(lambda kv: kv[1])
             | beam.Map(lambda kv: (kv[0], ",".join(sorted(kv[1]))))
             | "Second" >> beam.GroupByKey()
             | "SecondRecord" >> beam.Map(pane_record)
             | beam.Map(lambda r: ["second"] + r) | "SecondWrite" >> beam.ParDo(Record(out)))

    got, want = run_streaming(build, job_endpoint, tmp_path)
    assert any(p[2] == ["k0x"] for p in want)  # the DirectRunner took x at the boundary
    want = [p for p in want if not any("x" in v for v in (p[2] if p[0] != "second" else p[3]))]
    steps = [12000, 25000, 30000, 31000, MAX_MS]
    first = with_closing_panes([p for p in want if p[0] != "second"], False, 20000, steps)
    second = with_closing_panes([p[1:] for p in want if p[0] == "second"], False, 20000, steps)
    want = sorted(first + [["second"] + p for p in second], key=json.dumps)
    assert got == want
    k0 = [p for p in want if p[0] == "k0"]
    assert any(p[2] == ["k0d"] and p[3] == 2 for p in k0)  # late, within the lateness
    assert any(p[2] == ["k0e"] and p[3] == 2 and p[4] for p in k0)  # a window born late
    assert not any(v in p[2] for p in k0 for v in ("k0x", "k0y"))  # expired: dropped


def duplicated(keys, windows, by, seed):
    """Elements of several keys, each in three of the 30 s windows, one to
    four times there at one timestamp. by "key": (key, payload) pairs, the
    payload one per key and window; by "value": the key alone. Duplicates
    are equal, so which one survives does not depend on order."""
    r = random.Random(seed)
    rows = []
    for k in range(keys):
        for w in r.sample(range(windows), 3):
            t = w * 30 + r.randrange(30000) / 1000
            rows += [(f"k{k}", f"k{k}-{w}" if by == "key" else None, t)] * r.randint(1, 4)
    r.shuffle(rows)
    return rows


@timeout
@pytest.mark.parametrize("by", ["key", "value"])
def test_deduplicate_per_window(job_endpoint, tmp_path, by):
    """DeduplicatePerKey, and Deduplicate (the value is the key), keep one
    element per key and window, across several windows."""
    rows = duplicated(keys=250, windows=6, by=by, seed=5)

    def build(p, out):
        windowed = timestamped(p, rows) | beam.WindowInto(window.FixedWindows(30))
        if by == "key":
            deduped = windowed | DeduplicatePerKey(event_time_duration=Duration(seconds=3600))
        else:
            deduped = (windowed | beam.Keys()
                       | Deduplicate(event_time_duration=Duration(seconds=3600)))
        _ = deduped | beam.Map(element_record) | beam.ParDo(Record(out))

    got, want = run_batch(build, job_endpoint, tmp_path)
    assert got == want
    assert len(want) == len({(k, t) for k, _, t in rows}) == 750 < len(rows)
