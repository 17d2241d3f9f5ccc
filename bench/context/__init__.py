"""Token counting and the context window: fitting a request, summaries, their cadence."""
