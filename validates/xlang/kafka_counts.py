"""A streaming Python pipeline of Java transforms: ReadFromKafka from one
topic, fixed windows over the records' create times, a count per key and
window, WriteToKafka to another topic. Keys and values are bytes (Java's
Kafka transforms infer coders only for byte arrays and numbers); each
output record is KEY -> b"WINDOW_START_MS COUNT".

Usage: kafka_counts.py EXPANSION BOOTSTRAP IN_TOPIC OUT_TOPIC WINDOW_S [pipeline options]

Prints "JOB <id>" once the job runs, then waits for it to end (the test
drains it) and prints "STATE <state>".
"""
import sys
import typing

import apache_beam as beam
from apache_beam.io.kafka import ReadFromKafka, WriteToKafka
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import window


class FormatCount(beam.DoFn):
  def process(self, kv, win=beam.DoFn.WindowParam):
    key, count = kv
    yield key, b'%d %d' % (win.start.micros // 1000, count)


def main(argv):
  expansion, bootstrap, in_topic, out_topic, window_s = argv[:5]
  opts = PipelineOptions(argv[5:], streaming=True)
  p = beam.Pipeline(options=opts)
  _ = (
      p
      | ReadFromKafka(
          consumer_config={
              'bootstrap.servers': bootstrap, 'auto.offset.reset': 'earliest'
          },
          topics=[in_topic],
          timestamp_policy=ReadFromKafka.create_time_policy,
          expansion_service=expansion)
      | beam.WindowInto(window.FixedWindows(int(window_s)))
      | beam.combiners.Count.PerKey()
      # Typed so that the Java sink gets bytes coders, not pickled tuples.
      | beam.ParDo(FormatCount()).with_output_types(typing.Tuple[bytes, bytes])
      | WriteToKafka(
          producer_config={'bootstrap.servers': bootstrap},
          topic=out_topic,
          expansion_service=expansion))
  result = p.run()
  print('JOB', result._job_id, flush=True)
  try:
    result.wait_until_finish()
  except RuntimeError as e:
    # Python's portable runner raises for any end but DONE, DRAINED too.
    print(e, file=sys.stderr)
  print('STATE', result.state, flush=True)


if __name__ == '__main__':
  main(sys.argv[1:])
