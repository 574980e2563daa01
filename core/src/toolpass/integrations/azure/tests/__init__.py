"""The tests of the azure integration."""
