"""The vault operations the commands and the MCP server call: read, delete, move, restore, sync."""
