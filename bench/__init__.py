"""Benchmarks: scripts run by hand or by ``make bench``, never by the test suite."""
