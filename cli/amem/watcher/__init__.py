"""`amem watch`: file writes and deletes under watched folders become agentmemory observations.

Nothing outside `amem.commands.watch` imports this package, so watchdog, requests and pathspec load
only when the watcher runs.
"""
