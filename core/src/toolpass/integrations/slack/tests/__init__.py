"""The tests of the slack integration."""
