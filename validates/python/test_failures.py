"""A DoFn that raises on one record: the job fails at the first
deterministic error. With one worker (a LOOPBACK job) the bundle runs
once; with several (the default environment's worker processes) it runs
again once, on another worker, and the job fails when it raises the same
exception again. See docs/durability.md."""
import os

import pytest
from test_environments import run_job

timeout = pytest.mark.timeout(300, method="thread")
ERROR = "ValueError: bad record 7"


def runs(marks):
    """The runs of the bad record: (process id, ...) of each."""
    return [name.split("-")[0] for name in os.listdir(marks)]


@timeout
def test_user_error_loopback_runs_once(job_endpoint, tmp_path):
    res = run_job("raise_job.py", job_endpoint, f"--marks={tmp_path}", "--environment_type=LOOPBACK")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert len(runs(tmp_path)) == 1, out[-3000:]
    # The client shows the SDK's log of the one failure and the job's
    # error, which starts with the exception: no retries, no repeats.
    assert out.count("Error processing instruction") == 1, out[-5000:]
    assert "retrying" not in out, out[-5000:]
    assert out.count("failed in state FAILED: " + ERROR) == 1, out[-5000:]


@timeout
def test_user_error_default_environment_runs_twice_at_most(job_endpoint, tmp_path):
    res = run_job("raise_job.py", job_endpoint, f"--marks={tmp_path}")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    pids = runs(tmp_path)
    assert out.count("failed in state FAILED: " + ERROR) == 1, out[-5000:]
    if (os.cpu_count() or 1) > 1:
        # Several worker processes: once more, on another one.
        assert len(pids) == 2 and pids[0] != pids[1], (pids, out[-3000:])
        assert "not retried: user code failed the same way twice" in out, out[-5000:]
    else:
        assert len(pids) == 1, (pids, out[-3000:])
