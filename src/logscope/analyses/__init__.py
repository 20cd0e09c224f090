"""Analyses: pure functions over polars frames of events, returning typed results."""
