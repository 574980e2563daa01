"""The tests of the pagerduty integration."""
