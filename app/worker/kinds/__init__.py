"""One module per operation kind; app/worker/execute.py maps kind to module."""
