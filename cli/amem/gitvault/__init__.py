"""git: one module that runs git (arguments, failures, the index lock), history and commits, and the
merge driver that lets appends made on two machines merge."""
