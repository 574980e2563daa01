"""The tests of the datadog integration."""
