"""A ParDo that raises ValueError on one record (7) and, each time it does,
first leaves a file named by its process id and a counter in --marks, so
the test can count the runs of that record and the processes they ran in."""
import argparse
import os
import uuid

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


class RaiseOnSeven(beam.DoFn):
    def __init__(self, marks):
        self.marks = marks

    def process(self, n):
        if n == 7:
            with open(os.path.join(self.marks, '%d-%s' % (os.getpid(), uuid.uuid4().hex)), 'w'):
                pass
            raise ValueError('bad record %d' % n)
        yield n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--marks', required=True)
    known, rest = parser.parse_known_args()
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        _ = p | beam.Create(list(range(20))) | beam.ParDo(RaiseOnSeven(known.marks))


if __name__ == '__main__':
    main()
