"""The tests of the authzen integration."""
