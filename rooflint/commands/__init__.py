"""The commands (one module each) and the command line that calls them: thin layers
that read inputs, call measure/ for GPU work and judge/ for verdicts, and print."""
