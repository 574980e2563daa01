"""The tests of the bitbucket integration."""
