"""The tests of the jira integration."""
