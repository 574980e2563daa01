"""The tests of the kubernetes integration."""
