"""What the lane's Kafka pipelines share, on the client's side only (their
workers never import it; each script keeps its own DoFns, which pickle
with it): a per-key count in fixed windows written to Kafka, and running
a job the way the Go tests read it.
"""
import sys
import typing

import apache_beam as beam
from apache_beam.io.kafka import WriteToKafka
from apache_beam.transforms import window


def count_to_kafka(records, fmt, window_s, bootstrap, out_topic, expansion):
  """Counts records per key in fixed windows of window_s seconds and
  writes fmt's (key, value) bytes to out_topic."""
  return (
      records
      | beam.WindowInto(window.FixedWindows(int(window_s)))
      | beam.combiners.Count.PerKey()
      # Typed so that the Java sink gets bytes coders, not pickled tuples.
      | beam.ParDo(fmt).with_output_types(typing.Tuple[bytes, bytes])
      | WriteToKafka(
          producer_config={'bootstrap.servers': bootstrap},
          topic=out_topic,
          expansion_service=expansion))


def run_and_report(p):
  """Runs p, prints "JOB <id>" once it runs, waits for its end (the
  tests drain or cancel it) and prints "STATE <state>"."""
  result = p.run()
  print('JOB', result._job_id, flush=True)
  try:
    result.wait_until_finish()
  except RuntimeError as e:
    # Python's portable runner raises for any end but DONE: DRAINED, a
    # cancel too.
    print(e, file=sys.stderr)
  print('STATE', result.state, flush=True)
