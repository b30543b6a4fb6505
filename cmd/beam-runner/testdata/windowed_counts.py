"""Submits a streaming pipeline to a beam-runner job server and exits
without waiting (os._exit: the server may be killed under it): PeriodicImpulse, an
unbounded splittable source that checkpoints itself, from --start for
--seconds at --interval, in fixed windows; a GroupByKey per window and
key; a DoFn writing each window's count per key to its own file under
--out (written to a temp file, then renamed, so a re-run bundle
overwrites rather than adds). Prints the job id."""

import argparse
import os
import uuid

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.portable_runner import PortableRunner
from apache_beam.transforms import window
from apache_beam.transforms.periodicsequence import PeriodicImpulse


class WriteCount(beam.DoFn):
    def __init__(self, out, start):
        self.out, self.start = out, start

    def process(self, kv, w=beam.DoFn.WindowParam):
        key, ones = kv
        offset = int(round(float(w.start) - self.start))
        name = os.path.join(self.out, "w%04d-%s" % (offset, key))
        tmp = os.path.join(self.out, ".tmp-" + uuid.uuid4().hex)
        with open(tmp, "w") as f:
            f.write("%d\n" % sum(ones))
        os.rename(tmp, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--worker_pool", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--interval", type=float, required=True)
    ap.add_argument("--window", type=float, required=True)
    a = ap.parse_args()
    opts = PipelineOptions([
        "--job_endpoint=" + a.endpoint,
        "--environment_type=EXTERNAL",
        "--environment_config=" + a.worker_pool,
        "--streaming",
    ])
    elements = Metrics.counter("windowed_counts", "elements")

    def keyed(ts):
        elements.inc()
        return ("k%d" % (int(round((float(ts) - a.start) / a.interval)) % 3), 1)

    p = beam.Pipeline(runner=PortableRunner(), options=opts)
    _ = (p
         | PeriodicImpulse(start_timestamp=a.start, stop_timestamp=a.start + a.seconds,
                           fire_interval=a.interval)
         | beam.WindowInto(window.FixedWindows(a.window))
         | beam.Map(keyed)
         | beam.GroupByKey()
         | beam.ParDo(WriteCount(a.out, a.start)))
    res = p.run()
    print(res._job_id, flush=True)
    # Detached: the client's threads would otherwise keep following a
    # job whose server may be killed under them.
    os._exit(0)


if __name__ == "__main__":
    main()
