"""Processing time on the wall clock: a streaming job that reads a real
unbounded source (PeriodicImpulse, no TestStream) fires its
AfterProcessingTime early panes as wall-clock time passes.

There is no oracle run here: what is checked is when the panes come, as
seen by a DoFn that notes time.time() for each one.
"""
import json
import os
import time
import uuid

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import trigger, window
from apache_beam.transforms.periodicsequence import PeriodicImpulse
from apache_beam.utils.timestamp import Timestamp

timeout = pytest.mark.timeout(180, method="thread")

EARLY, ON_TIME = 0, 1  # PaneInfoTiming


class PaneClock(beam.DoFn):
    """Writes, per pane, the wall-clock time it reached this DoFn, its
    timing and its count, to a file of its own under out_dir."""

    def __init__(self, out_dir):
        self.out_dir = out_dir

    def process(self, kv, pane=beam.DoFn.PaneInfoParam):
        rec = {"at": time.time(), "timing": pane.timing, "count": kv[1]}
        with open(os.path.join(self.out_dir, uuid.uuid4().hex), "w") as f:
            json.dump(rec, f)


def panes(out_dir):
    out = []
    for name in os.listdir(out_dir):
        with open(os.path.join(out_dir, name)) as f:
            out.append(json.load(f))
    return sorted(out, key=lambda r: r["at"])


@timeout
def test_early_panes_every_two_seconds(job_endpoint, tmp_path):
    """AfterWatermark(early=AfterProcessingTime(2)), discarding, over 12 s
    of PeriodicImpulse: early panes about 2 s apart (1-4 s, room for a
    loaded machine), at least three, then the on-time pane when the source
    ends; each element is in exactly one pane."""
    period, length = 0.5, 12
    # A little in the future, so the job has started when the ticks begin.
    start = Timestamp.of(time.time() + 2)
    opts = PipelineOptions(["--runner=PortableRunner", f"--job_endpoint={job_endpoint}",
                            "--environment_type=LOOPBACK", "--streaming"])
    out = str(tmp_path / "panes")
    os.mkdir(out)
    with beam.Pipeline(options=opts) as p:
        _ = (p
             | PeriodicImpulse(start_timestamp=start, stop_timestamp=start + length,
                               fire_interval=period)
             # One window, starting at start, holds the whole run.
             | beam.WindowInto(window.FixedWindows(60, offset=start.micros / 1e6 % 60),
                               trigger=trigger.AfterWatermark(early=trigger.AfterProcessingTime(2)),
                               accumulation_mode=trigger.AccumulationMode.DISCARDING)
             | beam.Map(lambda _: ("n", 1))
             | beam.CombinePerKey(sum)
             | beam.ParDo(PaneClock(out)))

    got = panes(out)
    assert sum(r["count"] for r in got) == int(length / period), got
    assert got and got[-1]["timing"] == ON_TIME, got
    early = [r["at"] for r in got if r["timing"] == EARLY]
    assert len(early) >= 3, f"{len(early)} early panes: {got}"
    gaps = [round(b - a, 2) for a, b in zip(early, early[1:])]
    assert all(1 <= g <= 4 for g in gaps), f"early panes {gaps} s apart, want about 2 s"
