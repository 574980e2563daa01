"""The tests of the google_workspace integration."""
