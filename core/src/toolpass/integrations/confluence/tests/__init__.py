"""The tests of the confluence integration."""
