"""A Python pipeline for the differential check under splitting.

GroupByKey, CoGroupByKey, side inputs and CombinePerKey over ~1M records
read with ReadFromText from several files. The files make several initial
restrictions and the splittable read is what runners split dynamically, so
a runner that loses or repeats work given up by a split changes the output.
The validates harness runs this once on Python's DirectRunner and once on
the job server and requires the same lines.

  python3 splits_pipeline.py gen --dir D --records 1000000 --files 8
  python3 splits_pipeline.py run --input 'D/part-*' --output O [runner flags]

Every output line is a deterministic function of the input, so outputs of
two runners compare as sorted lines. The line "records\tN" lets the harness
check the oracle itself read every record.
"""
import argparse
import hashlib
import os
import random
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

NUM_KEYS = 1000


def generate(out_dir, records, files, seed):
    """Writes records lines "id,key,value" over files, Zipf-skewed keys."""
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(seed)
    weights = [1.0 / (k + 1) for k in range(NUM_KEYS)]
    keys = rng.choices(range(NUM_KEYS), weights=weights, k=records)
    per_file = (records + files - 1) // files
    for f in range(files):
        tmp = os.path.join(out_dir, f".part-{f:03d}.tmp")
        with open(tmp, "w") as out:
            for i in range(f * per_file, min(records, (f + 1) * per_file)):
                out.write(f"{i},k{keys[i]},{rng.randrange(1_000_000)}\n")
        os.replace(tmp, os.path.join(out_dir, f"part-{f:03d}"))


def parse(line):
    rid, key, value = line.split(",")
    return key, (int(rid), int(value))


def digest(ids):
    """Order-independent fingerprint of a key's record ids: a duplicated or
    lost record changes it even when counts happen to balance."""
    h = hashlib.sha256()
    for i in sorted(ids):
        h.update(i.to_bytes(8, "little"))
    return h.hexdigest()[:16]


def summarize_group(kv):
    key, vals = kv
    vals = list(vals)
    return key, (len(vals), digest(r for r, _ in vals),
                 min(v for _, v in vals), max(v for _, v in vals))


def join_line(kv, weights, total):
    key, g = kv
    (n, ids, lo, hi), = g["group"]  # exactly one group per key
    sums, counts = list(g["sum"]), list(g["count"])
    return (f"{key}\tn={n}\tids={ids}\tmin={lo}\tmax={hi}\tsum={sums}"
            f"\tcount={counts}\tweight={weights.get(key, 0)}"
            f"\tshare={n * 1_000_000 // total}")


def build(p, input_glob, output):
    recs = (p
            | "Read" >> beam.io.ReadFromText(input_glob)
            | "Parse" >> beam.Map(parse))
    total = (recs
             | "CountAll" >> beam.combiners.Count.Globally())
    weights = (p
               | "Keys" >> beam.Create([f"k{k}" for k in range(NUM_KEYS)])
               | "Weigh" >> beam.Map(lambda k: (k, len(k) * 7 % 11)))
    groups = (recs
              | "Group" >> beam.GroupByKey()
              | "Summarize" >> beam.Map(summarize_group))
    sums = (recs
            | "Values" >> beam.MapTuple(lambda k, rv: (k, rv[1]))
            | "SumPerKey" >> beam.CombinePerKey(sum))
    counts = recs | "CountPerKey" >> beam.combiners.Count.PerKey()
    joined = (
        {"group": groups, "sum": sums, "count": counts}
        | "Join" >> beam.CoGroupByKey()
        | "Format" >> beam.Map(join_line,
                               weights=beam.pvalue.AsDict(weights),
                               total=beam.pvalue.AsSingleton(total)))
    totals = total | "FormatTotal" >> beam.Map(lambda n: f"records\t{n}")
    _ = ((joined, totals)
         | "All" >> beam.Flatten()
         | "Write" >> beam.io.WriteToText(output))


def main(argv):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--dir", required=True)
    g.add_argument("--records", type=int, default=1_000_000)
    g.add_argument("--files", type=int, default=8)
    g.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("--input", required=True)
    r.add_argument("--output", required=True)
    args, rest = ap.parse_known_args(argv)
    if args.cmd == "gen":
        generate(args.dir, args.records, args.files, args.seed)
        return
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        build(p, args.input, args.output)


if __name__ == "__main__":
    main(sys.argv[1:])
