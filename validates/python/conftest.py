"""Shared pytest setup for the portable-runner checks.

The harness (validates/cmd/validates) starts the job server and passes its
address in BEAM_JOB_ENDPOINT; run by hand with e.g.
  BEAM_JOB_ENDPOINT=localhost:8073 python3 -m pytest -v validates/python
"""
import os

import pytest
from apache_beam.options.pipeline_options import PipelineOptions


@pytest.fixture
def job_endpoint():
    endpoint = os.environ.get("BEAM_JOB_ENDPOINT")
    if not endpoint:
        # Fail, not skip: a skipped check would hide a broken harness.
        pytest.fail("BEAM_JOB_ENDPOINT is not set (host:port of the job server)")
    return endpoint


@pytest.fixture
def options(job_endpoint):
    # LOOPBACK runs the SDK worker pool inside this process, so no Docker
    # and the pipeline sees this machine's files.
    return PipelineOptions([
        "--runner=PortableRunner",
        f"--job_endpoint={job_endpoint}",
        "--environment_type=LOOPBACK",
    ])
