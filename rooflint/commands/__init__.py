"""The command line and the commands it calls: cli.py parses each command's options into
its request (requests.py); the command's own module (run.py, gate.py, ...) checks it,
calls the engine for the work, prints and exits. Thin on purpose: what two commands share
is the engine's, and what a user reads is output's."""
