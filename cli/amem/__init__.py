"""amem: a memory for shell scripts, git hooks and AI coding agents, kept as plain Markdown."""

__version__ = "0.1.0"
