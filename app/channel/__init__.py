"""The runtime channel, the API side: what a run's in-driver runtime reads (directives) and
writes (progress, drain state, applied startpoints). Above runs and startpoints, which it
joins."""
