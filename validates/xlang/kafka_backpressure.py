"""A streaming Python pipeline whose one stage is far slower than its
source: ReadFromKafka (Java's KafkaIO, through the expansion service) from
a preloaded topic, then a stage that spends COST_MS of CPU on each record,
then a sink that only counts. The back-pressure check (backpressure_test.go)
watches the runner while the backlog waits, then cancels the job.

Usage: kafka_backpressure.py EXPANSION BOOTSTRAP TOPIC COST_MS [pipeline options]

Prints "JOB <id>" once the job runs, then waits for it to end and prints
"STATE <state>".
"""
import sys
import time

import apache_beam as beam
from apache_beam.io.kafka import ReadFromKafka
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions

import kafka_job


class SlowStage(beam.DoFn):
  """Spends a fixed CPU time per record: thread CPU time, so a loaded
  machine makes the stage slower in wall time, never cheaper."""
  def __init__(self, cost_ms):
    self._cost = cost_ms / 1000.0

  def process(self, kv):
    end = time.thread_time() + self._cost
    while time.thread_time() < end:
      pass
    yield len(kv[1])


class Sink(beam.DoFn):
  def __init__(self):
    self._seen = Metrics.counter('backpressure', 'records_sunk')

  def process(self, n):
    self._seen.inc()


def main(argv):
  expansion, bootstrap, topic, cost_ms = argv[:4]
  opts = PipelineOptions(argv[4:], streaming=True)
  p = beam.Pipeline(options=opts)
  _ = (
      p
      | ReadFromKafka(
          consumer_config={
              'bootstrap.servers': bootstrap, 'auto.offset.reset': 'earliest'
          },
          topics=[topic],
          expansion_service=expansion)
      | 'SlowStage' >> beam.ParDo(SlowStage(float(cost_ms)))
      | 'Sink' >> beam.ParDo(Sink()))
  kafka_job.run_and_report(p)


if __name__ == '__main__':
  main(sys.argv[1:])
