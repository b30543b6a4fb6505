"""Running windowing pipelines on the job server and on an oracle, and
recording what they produce, for test_custom_windows.py, test_sessions.py
and test_event_time.py.

Batch pipelines compare with Python's FnApiRunner, in process. It refuses
TestStream (fn_runner.py raises NotImplementedError for it), so streaming
pipelines compare with Python's streaming DirectRunner, which groups with
the SDK's trigger.py (GeneralTriggerDriver). Where an oracle departs from
Beam's model, the test says so and asserts the model's answer.

Records hold window bounds, pane info and timestamps, so a difference in
any of them shows.
"""
import json
import random

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms import window
from apache_beam.utils.timestamp import MAX_TIMESTAMP

from test_model import Record, direct, millis, portable, records

TV = window.TimestampedValue
MAX_MS = millis(MAX_TIMESTAMP)  # the TestStream's final watermark
__all__ = ["MAX_MS", "Record", "TV", "millis", "records", "run_batch", "run_streaming", "window_record",
           "pane_record", "element_record", "last_pane_final", "with_closing_panes", "keyed_input",
           "timestamped"]


def _run(pipelines, build, tmp_path):
    got = []
    for name, make in pipelines:
        out = tmp_path / name
        out.mkdir()
        with make() as p:
            build(p, str(out))
        got.append(sorted(records(str(out)), key=json.dumps))
    return got


def run_batch(build, job_endpoint, tmp_path):
    """Runs build(pipeline, out_dir) on the server and on FnApiRunner;
    returns (server records, FnApiRunner records), each sorted."""
    return _run([("server", lambda: beam.Pipeline(options=portable(job_endpoint))),
                 ("fnapi", lambda: beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions([])))],
                build, tmp_path)


def run_streaming(build, job_endpoint, tmp_path):
    """Runs build(pipeline, out_dir) on the server and on the streaming
    DirectRunner; returns (server records, DirectRunner records), sorted."""
    return _run([("server", lambda: beam.Pipeline(options=portable(job_endpoint, streaming=True))),
                 ("direct", lambda: beam.Pipeline(options=direct(streaming=True)))],
                build, tmp_path)


def window_record(w):
    """A window as JSON: interval bounds, or a custom window's type and fields."""
    if isinstance(w, window.IntervalWindow):
        return [millis(w.start), millis(w.end)]
    if isinstance(w, window.GlobalWindow):
        return "global"
    return [type(w).__name__, millis(w.end)] + [getattr(w, f) for f in getattr(w, "record_fields", ())]


def pane_record(kv, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam, t=beam.DoFn.TimestampParam):
    """A GroupByKey's output: key, window, sorted values, pane timing,
    is_first, is_last, index, non-speculative index, timestamp (ms)."""
    return [kv[0], window_record(w), sorted(kv[1]), pane.timing, pane.is_first,
            pane.is_last, pane.index, pane.nonspeculative_index, millis(t)]


def element_record(e, w=beam.DoFn.WindowParam, t=beam.DoFn.TimestampParam):
    """Any element with its window and timestamp (ms)."""
    return [e, window_record(w), millis(t)]


def last_pane_final(panes):
    """Marks each window's last pane final, as Beam's model makes it.

    When the watermark passes a window's end plus its allowed lateness, Java's
    ReduceFnRunner garbage-collects the window and emits its pane with
    isFinished (onTimers, then onTrigger): in batch the watermark jumps to
    the end of time, so the one pane of each window is ON_TIME, first and
    last (Java's PaneInfo.ON_TIME_AND_ONLY_FIRING; FnApiRunner gives the
    same for the global window). For other windows FnApiRunner groups with
    trigger.py's GeneralTriggerDriver, which marks a pane last only when its
    trigger finishes, and the default trigger never does.
    """
    last = {}
    for p in panes:
        key = json.dumps(p[:2])
        if key not in last or p[6] > last[key][6]:
            last[key] = p
    for p in last.values():
        p[5] = True
    return sorted(panes, key=json.dumps)


def keyed_input(n, keys, span_s, seed):
    """n (key, value, timestamp in seconds with ms precision) tuples."""
    r = random.Random(seed)
    return [(f"k{r.randrange(keys)}", i, r.randrange(span_s * 1000) / 1000) for i in range(n)]


def timestamped(p, rows, label="Input"):
    """A PCollection of (key, value) at each row's timestamp."""
    return (p | label >> beam.Create(rows)
            | label + "Stamp" >> beam.Map(lambda r: TV((r[0], r[1]), r[2])))


def with_closing_panes(panes, accumulating, lateness_ms, watermarks_ms):
    """Gives the DirectRunner's panes the final pane of each window that
    lives until it expires, as Beam's model gives it.

    Python writes ClosingBehavior EMIT_ALWAYS into every windowing strategy.
    Under it a runner garbage-collecting a window whose trigger has not
    finished (the watermark passed its end plus the allowed lateness) emits
    one last pane even with no new elements (Java's ReduceFnRunner.needToEmit):
    the accumulated values, or none when discarding. When one watermark step
    (of watermarks_ms, the TestStream's) passes both the window's end and
    its expiry, that pane is the on-time one, marked last; otherwise it is a
    LATE pane of its own. Python's DirectRunner never marks a pane last for
    this. Windows merged into a larger one are not collected: no pane.
    """
    last = {}
    for p in panes:
        key = json.dumps(p[:2])
        if key not in last or p[6] > last[key][6]:
            last[key] = p
    out = list(panes)
    for p in last.values():
        if p[5] or _merged_away(p, last.values()):
            continue
        max_ts = p[1][1] - 1
        if p[3] == 1 and min(w for w in watermarks_ms if w > max_ts) > max_ts + lateness_ms:
            p[5] = True
            continue
        nonspec = p[7] + 1 if p[7] >= 0 else 0
        out.append([p[0], p[1], p[2] if accumulating else [], 2, False, True, p[6] + 1, nonspec, p[8]])
    return sorted(out, key=json.dumps)


def _merged_away(pane, lasts):
    (k, w) = pane[:2]
    return any(q[0] == k and q[1] != w and q[1][0] <= w[0] and w[1] <= q[1][1] for q in lasts)
