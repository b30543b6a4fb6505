"""Pytest plugin standing in for Beam's sdks/python/conftest.py.

Beam's own test files (e.g. prism_runner_test.py, shipped in the apache-beam
wheel) read the --test-pipeline-options pytest option, which Beam defines in
sdks/python/conftest.py; that file is not in the wheel. Load this plugin
with `-p beam_options_plugin` (its directory on PYTHONPATH) to run those
files unmodified.

It keeps the parts of Beam's conftest that affect how tests run: the option
itself, handing it to TestPipeline, and the additional type checks Beam
enables for every test. Beam's CI-only environment tweaks (gRPC keepalives,
testcontainers) are left out.
"""
from apache_beam.options import pipeline_options
from apache_beam.testing.test_pipeline import TestPipeline


def pytest_addoption(parser):
    parser.addoption(
        "--test-pipeline-options",
        help="Options to use in test pipelines. NOTE: Tests may "
        "ignore some or all of these options.")


def pytest_configure(config):
    TestPipeline.pytest_test_pipeline_options = config.getoption(
        "test_pipeline_options", default="")
    pipeline_options.enable_all_additional_type_checks()
