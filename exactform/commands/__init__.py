"""One module per ``exactform`` sub-command."""
