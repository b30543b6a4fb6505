"""A batch pipeline with a DoFn that requires stable input behind a
nondeterministic one: --n indices, a random value each (Random), and a
DoFn (Stable) that records each (index, value) it reads as a file
"INDEX-VALUE" under --out, slowly (--sleep seconds an element, so a
server kill lands mid-job), and fails its first attempt of the bundle
holding index --fail_at (a forced retry).

Python's DoFns have no way to ask for stable input, so with --stable the
script sets ParDoPayload.requires_stable_input on Stable in the pipeline
proto (and the pipeline's requirement), as Java's translation does.

If the runner honours the flag, Stable reads the same value for an index
on every attempt, after a retry and after a restore: one value per index.
Without it, a retry computes Random again and Stable sees a second value.

Submits the job and prints its id. With --wait it waits for the job's end
(exit status 1 unless DONE); without, it exits at once (os._exit: the
server may be killed under it)."""

import argparse
import os
import random
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.portability.portable_runner import PortableRunner

STABLE_URN = "beam:requirement:pardo:stable_input:v1"


class Stable(beam.DoFn):
    def __init__(self, out, sleep, fail_at):
        self.out, self.sleep, self.fail_at = out, sleep, fail_at

    def process(self, kv):
        i, v = kv
        time.sleep(self.sleep)
        if i == self.fail_at:
            marker = os.path.join(self.out, ".failed-once")
            if not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError("Stable fails its first attempt of index %d" % i)
        path = os.path.join(self.out, "%d-%s" % (i, v))
        open(path, "w").close()


def mark_stable(proto, name):
    """Sets requires_stable_input on the ParDo named name."""
    for t in proto.components.transforms.values():
        if t.unique_name.split("/")[-1] == name and t.spec.urn == "beam:transform:pardo:v1":
            pl = beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload)
            pl.requires_stable_input = True
            t.spec.payload = pl.SerializeToString()
            if STABLE_URN not in proto.requirements:
                proto.requirements.append(STABLE_URN)
            return
    raise SystemExit("no ParDo named %s in the pipeline" % name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--sleep", type=float, default=0.1)
    ap.add_argument("--fail_at", type=int, default=7)
    ap.add_argument("--stable", action="store_true")
    ap.add_argument("--wait", action="store_true")
    args = ap.parse_args()

    if args.stable:
        to_runner_api = beam.Pipeline.to_runner_api

        def marked(self, *a, **kw):
            proto = to_runner_api(self, *a, **kw)
            mark_stable(proto, "Stable")
            return proto

        beam.Pipeline.to_runner_api = marked

    opts = PipelineOptions(["--job_endpoint=" + args.endpoint])
    p = beam.Pipeline(runner=PortableRunner(), options=opts)
    (p
     | beam.Create(list(range(args.n)), reshuffle=False)
     | "Random" >> beam.Map(lambda i: (i, "%016x" % random.getrandbits(64)))
     | "Stable" >> beam.ParDo(Stable(args.out, args.sleep, args.fail_at)))
    result = p.run()
    print(result._job_id, flush=True)  # no public accessor in 2.77
    if not args.wait:
        os._exit(0)
    state = result.wait_until_finish()
    raise SystemExit(0 if state == "DONE" else 1)


if __name__ == "__main__":
    main()
