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

import apache_beam as beam
from apache_beam.io.kafka import ReadFromKafka
from apache_beam.options.pipeline_options import PipelineOptions

import kafka_job


class FormatCount(beam.DoFn):
  def process(self, kv, win=beam.DoFn.WindowParam):
    key, count = kv
    yield key, b'%d %d' % (win.start.micros // 1000, count)


def main(argv):
  expansion, bootstrap, in_topic, out_topic, window_s = argv[:5]
  opts = PipelineOptions(argv[5:], streaming=True)
  p = beam.Pipeline(options=opts)
  records = (
      p
      | ReadFromKafka(
          consumer_config={
              'bootstrap.servers': bootstrap, 'auto.offset.reset': 'earliest'
          },
          topics=[in_topic],
          timestamp_policy=ReadFromKafka.create_time_policy,
          expansion_service=expansion))
  kafka_job.count_to_kafka(
      records, FormatCount(), window_s, bootstrap, out_topic, expansion)
  kafka_job.run_and_report(p)


if __name__ == '__main__':
  main(sys.argv[1:])
