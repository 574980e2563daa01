"""The tests of the gitlab integration."""
