"""The status page at /ui: server-rendered HTML for a person with only a browser."""
