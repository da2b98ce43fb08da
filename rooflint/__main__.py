"""``python -m rooflint`` runs the command line, like the ``rooflint`` script."""

from rooflint.commands.cli import app

app(prog_name="rooflint")
