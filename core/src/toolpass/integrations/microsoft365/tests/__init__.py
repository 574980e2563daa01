"""The tests of the microsoft365 integration."""
