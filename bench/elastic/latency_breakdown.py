"""Where an elastic run's window latency goes, from its server's debug
log (ELASTIC_SERVER_FLAGS=--log_level=debug XLANG_LOGDIR=DIR make
elastic; then python3 bench/elastic/latency_breakdown.py
DIR/elastic-server.log).

For each 5 s window end E after the first minute: when the Kafka read's
output watermark passed E (its bundle's commit), when CpuStage's did,
when the count stage and the write stage committed the window's pane
(input timestamp E - 1 ms). Prints each step's p50/p90/p99 over the
windows, and the read's bundle cadence."""
import datetime
import json
import re
import sys

INF = {"-inf": -1e18, "+inf": 1e18, "0": 0, "end-of-global": 1e18}


def wall(s):
  return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def event(s, day):
  """An event time as the log prints it, "15:04:05.000", on day."""
  if s in INF:
    return INF[s]
  h, m, sec = s.split(":")
  return day + int(h) * 3600 + int(m) * 60 + float(sec)


def read_log(path):
  """The stages' names and every bundle commit: (wall time, stage,
  (inputs, lo, hi), [(pcoll, n, lo, hi, watermark)])."""
  names, commits, day = {}, [], None
  for line in open(path):
    if not line.startswith("{"):
      continue
    try:
      r = json.loads(line)
    except ValueError:
      continue
    if r.get("msg") == "stage parallelism":
      names[r["stage"]] = r.get("name", "")
    if r.get("msg") != "bundle committed":
      continue
    t = wall(r["time"])
    if day is None:
      day = (t // 86400) * 86400
    outs = []
    for o in filter(None, r.get("outputs", "").split("; ")):
      m = re.match(r"(\S+): (\d+) elems ts \[(\S+), (\S+)\] wm (\S+)", o)
      if m:
        outs.append((m[1], int(m[2]), event(m[3], day), event(m[4], day), event(m[5], day)))
    m = re.match(r"(\d+) elems ts \[(\S+), (\S+)\]", r.get("inputs", ""))
    inp = (int(m[1]), event(m[2], day), event(m[3], day)) if m else (0, 0, 0)
    commits.append((t, r["stage"], inp, outs))
  return names, commits


def q(xs, p):
  return xs[min(len(xs) - 1, int(len(xs) * p))]


def main(path):
  names, commits = read_log(path)
  of = lambda pred: [s for s, n in names.items() if pred(n)]
  reads = of(lambda n: "ReadFromKafka" in n)
  read = [max(reads, key=lambda s: sum(1 for c in commits if c[1] == s))]
  cpu = of(lambda n: n.startswith("CpuStage"))
  count = of(lambda n: "CombinePerKey" in n and "Merge" in n)
  write = of(lambda n: n.startswith("WriteToKafka"))

  def first_wm(ids, e):
    return next((t for t, s, _, outs in commits
                 if s in ids and outs and min(o[4] for o in outs) >= e), None)

  def first_pane(ids, e):
    return next((t for t, s, inp, _ in commits
                 if s in ids and inp[0] > 0 and inp[1] <= e - 0.001 <= inp[2]), None)

  ts = [c[0] for c in commits]
  rows, e = [], (int(min(ts) + 60) // 5 + 1) * 5
  while e < max(ts) - 20:
    t = [first_wm(read, e), first_wm(cpu, e), first_pane(count, e), first_pane(write, e)]
    if None not in t:
      rows.append((t[0] - e, t[1] - t[0], t[2] - t[1], t[3] - t[2], t[3] - e))
    e += 5
  print("%d windows" % len(rows))
  for i, what in enumerate(["read's watermark past the end", "CpuStage's after the read's",
                            "count stage's pane after", "write stage's pane after",
                            "window end to written"]):
    xs = sorted(r[i] for r in rows)
    print("%-30s p50 %5.2f s  p90 %5.2f s  p99 %5.2f s" % (what, q(xs, .5), q(xs, .9), q(xs, .99)))
  rc = [(t, outs) for t, s, _, outs in commits if s in read and outs]
  sizes = sorted(sum(o[1] for o in outs) for _, outs in rc)
  lag = sorted(t - min(o[4] for o in outs) for t, outs in rc if min(o[4] for o in outs) > 0)
  print("read: %d commits, records per commit p50 %d; its watermark behind the commit p50 %.2f s, p90 %.2f s"
        % (len(rc), q(sizes, .5), q(lag, .5), q(lag, .9)))


if __name__ == "__main__":
  main(sys.argv[1])
