"""The tests of the zendesk integration."""
