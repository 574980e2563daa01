"""The tests of the linear integration."""
