"""Tiny pipelines in a row in one process, each with a timeline by phase.

Runs --jobs pipelines (Create -> Map -> GroupByKey -> assert_that), one
after the other, in this process, on the runner the flags name (e.g.
--runner=PrismRunner --prism_location=BIN), and prints one JSON line per
job: its wall time and the moments, seen from the client and its LOOPBACK
worker (the same for every job server), at which each phase ended. The
moments are read from the SDK's own calls, wrapped here, on this process's
monotonic clock, so they say where a job's time goes without reading any
server's logs.

  python3 tiny.py --jobs 15 --runner=PrismRunner --prism_location=BIN

With a beam-runner binary and --prism_log_level=debug, the server's own
timeline of each job (runner/execute's "job timeline" line) follows, one
JSON line per job with "server".
"""
import argparse
import json
import logging
import re
import sys
import threading
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability import portable_runner
from apache_beam.runners.worker import data_plane
from apache_beam.runners.worker import sdk_worker
from apache_beam.runners.worker import worker_pool_main
from apache_beam.testing.util import assert_that
from apache_beam.testing.util import equal_to

_lock = threading.Lock()
_events = []  # (name, monotonic seconds), of the job running now


def mark(name):
  with _lock:
    _events.append((name, time.monotonic()))


def wrap(cls, attr, name):
  """Marks NAME_start and NAME_end around every call of cls.attr."""
  static = isinstance(cls.__dict__.get(attr), staticmethod)
  inner = getattr(cls, attr)

  def wrapper(*args, **kwargs):
    mark(name + '_start')
    try:
      return inner(*args, **kwargs)
    finally:
      mark(name + '_end')

  setattr(cls, attr, staticmethod(wrapper) if static else wrapper)


def wrap_instructions():
  """Marks each Fn API instruction the worker carries out, by kind."""
  inner = sdk_worker.SdkWorker.do_instruction

  def do_instruction(self, request):
    kind = request.WhichOneof('request')
    mark(kind + '_start')
    try:
      return inner(self, request)
    finally:
      mark(kind + '_end')

  sdk_worker.SdkWorker.do_instruction = do_instruction


def wrap_inputs():
  """Marks when a bundle's input is asked for, arrives and ends."""
  inner = data_plane._GrpcDataChannel.input_elements

  def input_elements(self, *args, **kwargs):
    mark('inputs_wait')
    seen = False
    for element in inner(self, *args, **kwargs):
      if not seen:
        mark('inputs_first')
        seen = True
      yield element
    mark('inputs_end')

  data_plane._GrpcDataChannel.input_elements = input_elements


def marked_states(stream):
  """Marks state_<N> at each JobStateEvent, states_end at the stream's end."""
  for event in stream:
    mark('state_%d' % event.state)
    yield event
  mark('states_end')


def marked_messages(stream):
  """Marks messages_end when the message stream ends."""
  yield from stream
  mark('messages_end')


def wrap_result():
  inner = portable_runner.PipelineResult.__init__

  def init(self, job_service, job_id, message_stream, state_stream, *rest):
    inner(
        self,
        job_service,
        job_id,
        marked_messages(message_stream),
        marked_states(state_stream),
        *rest)

  portable_runner.PipelineResult.__init__ = init


def instrument():
  runner = portable_runner.PortableRunner
  wrap(runner, 'start_and_replace_loopback_environments', 'loopback')
  wrap(runner, '_optimize_pipeline', 'optimize')
  wrap(runner, 'create_job_service', 'job_service')
  wrap(portable_runner.JobServiceHandle, 'get_pipeline_options', 'options')
  wrap(portable_runner.JobServiceHandle, 'prepare', 'prepare')
  wrap(portable_runner.JobServiceHandle, 'stage', 'stage')
  wrap(portable_runner.JobServiceHandle, 'run', 'run_rpc')
  wrap(
      worker_pool_main.BeamFnExternalWorkerPoolServicer,
      'StartWorker',
      'start_worker')
  wrap_instructions()
  wrap(sdk_worker.BundleProcessorCache, 'get', 'processor')
  wrap_inputs()
  wrap_result()


def first(events, name):
  return next((t for n, t in events if n == name), None)


def last(events, name):
  return next((t for n, t in reversed(events) if n == name), None)


def spans(events, start, end):
  """Total seconds between each START event and the END event after it."""
  total, opened = 0.0, None
  for n, t in events:
    if n == start and opened is None:
      opened = t
    elif n == end and opened is not None:
      total += t - opened
      opened = None
  return round(total, 4)


def phases(events, t0, t1):
  """The job's phases, in seconds, from its events (None: not seen)."""
  done = first(events, 'state_%d' % beam_job_api_pb2.JobState.DONE)

  def span(a, b):
    return None if a is None or b is None else round(b - a, 4)

  bundles = [(t, n) for n, t in events
             if n in ('process_bundle_start', 'process_bundle_end')]
  busy = 0.0
  opened = None
  for t, n in bundles:
    if n == 'process_bundle_start':
      opened = t if opened is None else opened
    elif opened is not None:
      busy += t - opened
      opened = None
  first_bundle = first(events, 'process_bundle_start')
  last_bundle = last(events, 'process_bundle_end')
  return {
      'total': span(t0, t1),
      # The job as the job server and the worker see it: from asking the
      # server for its options (the first call) to DONE.
      'options_to_done': span(first(events, 'options_start'), done),
      'client_before_prepare': span(t0, first(events, 'prepare_start')),
      'loopback_pool': span(first(events, 'loopback_start'), first(events, 'loopback_end')),
      'optimize': span(first(events, 'optimize_start'), last(events, 'optimize_end')),
      'job_service': span(first(events, 'job_service_start'), first(events, 'job_service_end')),
      'options_rpc': span(first(events, 'options_start'), first(events, 'options_end')),
      'prepare': span(first(events, 'options_end'), first(events, 'prepare_end')),
      'stage': span(first(events, 'stage_start'), first(events, 'stage_end')),
      'run_rpc': span(first(events, 'run_rpc_start'), first(events, 'run_rpc_end')),
      'run_to_start_worker': span(first(events, 'run_rpc_start'), first(events, 'start_worker_start')),
      'start_worker_to_register': span(first(events, 'start_worker_start'), first(events, 'register_start')),
      'register_to_first_bundle': span(first(events, 'register_end'), first_bundle),
      'start_worker_to_first_bundle': span(first(events, 'start_worker_start'), first_bundle),
      'first_to_last_bundle': span(first_bundle, last_bundle),
      'bundles_busy': round(busy, 4),
      'between_bundles': span(busy, span(first_bundle, last_bundle)),
      'bundles': sum(1 for _, n in bundles if n == 'process_bundle_start'),
      'in_bundle_processor_get': spans(events, 'processor_start', 'processor_end'),
      'in_bundle_input_wait': spans(events, 'inputs_wait', 'inputs_first'),
      'in_bundle_inputs': spans(events, 'inputs_first', 'inputs_end'),
      'in_bundle_after_inputs': spans(events, 'inputs_end', 'process_bundle_end'),
      'last_bundle_to_done': span(last_bundle, done),
      'done_to_return': span(done, t1),
      'done_to_messages_end': span(done, first(events, 'messages_end')),
  }


class Timelines(logging.Handler):
  """Keeps the "job timeline" lines of a beam-runner server started at
  --prism_log_level=debug (Python's PrismRunner relogs the server's log as
  "job timeline (job='...', total_ms=1.0, ...)"): where its time went."""
  def __init__(self):
    super().__init__()
    self.rows = []

  def emit(self, record):
    msg = record.getMessage()
    if msg.startswith('job timeline'):
      self.rows.append({
          k: float(v)
          for k, v in re.findall(r'(\w+_ms)=([0-9.]+)', msg)
      })


def tiny(options):
  p = beam.Pipeline(options=options)
  out = (
      p
      | beam.Create([('a', 1), ('b', 2), ('a', 3)])
      | beam.Map(lambda kv: (kv[0], kv[1] * 10))
      | beam.GroupByKey()
      | beam.MapTuple(lambda k, vs: (k, sorted(vs))))
  assert_that(out, equal_to([('a', [10, 30]), ('b', [20])]))
  return p


def main(argv):
  parser = argparse.ArgumentParser()
  parser.add_argument('--jobs', type=int, default=15)
  parser.add_argument('--label', default='')
  args, rest = parser.parse_known_args(argv)
  instrument()
  timelines = Timelines()
  logging.getLogger().addHandler(timelines)
  logging.getLogger().setLevel(logging.INFO)
  options = PipelineOptions(rest)
  for i in range(args.jobs):
    with _lock:
      _events.clear()
    t0 = time.monotonic()
    result = tiny(options).run()
    state = result.wait_until_finish()
    t1 = time.monotonic()
    with _lock:
      events = list(_events)
    row = {'label': args.label, 'job': i, 'state': str(state)}
    row.update(phases(events, t0, t1))
    print(json.dumps(row), flush=True)
  time.sleep(0.5)  # the server's last lines reach the log
  for i, phases_ms in enumerate(timelines.rows):
    print(
        json.dumps({
            'label': args.label, 'server_job': i, 'server': phases_ms
        }),
        flush=True)


if __name__ == '__main__':
  main(sys.argv[1:])
