"""The index keeper: a long-running process that keeps one vault's index fresh from file-system
events and vouches for it to other amem processes."""
