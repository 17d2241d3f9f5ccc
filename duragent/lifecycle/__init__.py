"""How the process's long-lived parts start, run in the background and stop.

- ``services``: the ``Service`` protocol and the stack that starts services from one list
  and stops them in reverse (a failed start stops what already started).
- ``tasks``: ``BackgroundTasks``, the one owner of background tasks: keeps them alive, logs
  their failures, ends them on stop.

Here, below the front ends, because every front end uses them and may not import the runtime.
"""
