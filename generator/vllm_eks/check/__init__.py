"""Checks against a plan's outputs: scheduling fit of rendered workloads, calibration against real logs."""
