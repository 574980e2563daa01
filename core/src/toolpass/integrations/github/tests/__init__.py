"""The tests of the github integration."""
