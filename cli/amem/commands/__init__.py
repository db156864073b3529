"""One small module per subcommand; each defines `command`."""
