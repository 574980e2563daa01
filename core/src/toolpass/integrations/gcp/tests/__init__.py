"""The tests of the gcp integration."""
