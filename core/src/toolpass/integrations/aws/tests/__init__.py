"""The tests of the aws integration."""
