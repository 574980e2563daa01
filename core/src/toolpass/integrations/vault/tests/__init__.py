"""The tests of the vault integration."""
