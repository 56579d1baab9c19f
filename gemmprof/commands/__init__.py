"""One small module per subcommand: each parses options and calls the library."""
