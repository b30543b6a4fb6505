"""The elastic benchmark's pipeline (docs/bench/elastic.md): ReadFromKafka
(Java's KafkaIO, records' create times as event times), a stage spending
CPU_MS of CPU on each record, a stage waiting WAIT_MS on each (a remote
lookup; left out when 0), fixed windows of WINDOW_S, a count per key and
window, WriteToKafka: KEY -> b"WINDOW_START_MS COUNT".

Usage: elastic.py EXPANSION BOOTSTRAP IN_TOPIC OUT_TOPIC WINDOW_S CPU_MS WAIT_MS [pipeline options]

Prints "JOB <id>" once the job runs, then waits for it to end (the
benchmark cancels it) and prints "STATE <state>".
"""
import sys
import time

import apache_beam as beam
from apache_beam.io.kafka import ReadFromKafka
from apache_beam.options.pipeline_options import PipelineOptions

import kafka_job


class CpuStage(beam.DoFn):
  """Spends a fixed CPU time per record: thread CPU time, so a host held
  to a fraction of a core takes proportionally longer in wall time."""
  def __init__(self, cost_ms):
    self._cost = cost_ms / 1000.0

  def process(self, kv):
    end = time.thread_time() + self._cost
    while time.thread_time() < end:
      pass
    yield kv


class WaitStage(beam.DoFn):
  """Waits a fixed time per record without using CPU, as a remote lookup."""
  def __init__(self, wait_ms):
    self._wait = wait_ms / 1000.0

  def process(self, kv):
    time.sleep(self._wait)
    yield kv


class FormatCount(beam.DoFn):
  def process(self, kv, win=beam.DoFn.WindowParam):
    key, count = kv
    yield key, b'%d %d' % (win.start.micros // 1000, count)


def main(argv):
  expansion, bootstrap, in_topic, out_topic, window_s, cpu_ms, wait_ms = argv[:7]
  opts = PipelineOptions(argv[7:], streaming=True)
  p = beam.Pipeline(options=opts)
  records = (
      p
      | ReadFromKafka(
          consumer_config={
              'bootstrap.servers': bootstrap, 'auto.offset.reset': 'earliest'
          },
          topics=[in_topic],
          timestamp_policy=ReadFromKafka.create_time_policy,
          expansion_service=expansion)
      | 'CpuStage' >> beam.ParDo(CpuStage(float(cpu_ms))))
  if float(wait_ms) > 0:
    records = records | 'WaitStage' >> beam.ParDo(WaitStage(float(wait_ms)))
  kafka_job.count_to_kafka(
      records, FormatCount(), window_s, bootstrap, out_topic, expansion)
  kafka_job.run_and_report(p)


if __name__ == '__main__':
  main(sys.argv[1:])
