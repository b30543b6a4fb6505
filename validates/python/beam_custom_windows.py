"""Beam's custom-window tests of fn_runner_test.py, run as PrismRunnerTest.

PrismRunnerTest (prism_runner_test.py in the apache-beam wheel) overrides
test_custom_merging_window and test_custom_window_type with skips because
Prism cannot run them (Beam issue #31921). This class is PrismRunnerTest
with Beam's own method bodies (FnApiRunnerTest's) put back, so they run
unmodified against the binary given by --prism_bin.

The harness (validates/cmd/validates/windowing.go) collects only these two
methods by node id; the file's name does not match test_*.py, so the
checks in this directory never collect it (it would re-run the whole
PrismRunnerTest class).
"""
# Modules, not classes, are imported: pytest collects every test class a
# module holds by name.
from apache_beam.runners.portability import prism_runner_test
from apache_beam.runners.portability.fn_api_runner import fn_runner_test


class CustomWindowsPrismTest(prism_runner_test.PrismRunnerTest):
    test_custom_merging_window = fn_runner_test.FnApiRunnerTest.test_custom_merging_window
    test_custom_window_type = fn_runner_test.FnApiRunnerTest.test_custom_window_type
