"""A pipeline whose DoFn imports a package that only its
--requirements_file provides: the SDK workers must have installed it."""
import argparse

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def camel(word):
    import inflection  # from the job's requirements, not this interpreter
    return inflection.camelize(word)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--output', required=True)
    known, rest = parser.parse_known_args()
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        _ = (
            p
            | beam.Create(['device_type', 'foo_bar', 'beam_runner'])
            | beam.Map(camel)
            | beam.io.WriteToText(known.output))


if __name__ == '__main__':
    main()
