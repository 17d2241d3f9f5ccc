"""duragent's benchmarks: each prints a table and can be rerun by anyone (``README.md``).

Run one as a module from the project root, e.g. ``.venv/bin/python -m bench.year --quick``
or ``.venv/bin/python -m bench.components.hot_paths`` (``--help`` for options). By concern:

- ``components``: one part of duragent in this process (sessions, the agentic loop, a model
  request, the bash policy, the scheduler, the suite's former timings);
- ``context``: token counting and the context window (fitting, summaries);
- ``http``: a real ``duragent serve`` over HTTP (turns, the OpenAI API, metrics, the accept
  cap, several nodes, a hostile model);
- ``gateways``: the chat front ends against their fakes (Telegram, Discord, an external
  gateway);
- ``restarts``: SIGKILL campaigns (session workers, each chat front end);
- ``year``: a simulated year of a busy deployment (``python -m bench.year``);
- ``rigs``: what several of them share (the table, the text corpus, ``/proc`` readings).

Test support they share with the suite (fakes, the restart campaigns and their verdict) is
``duragent.testing``.
"""
