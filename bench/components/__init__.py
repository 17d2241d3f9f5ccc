"""One part of duragent measured in this process: sessions, the loop, a model request, policy,
the scheduler, and the hot paths the suite used to time."""
