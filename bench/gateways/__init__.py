"""The chat front ends against their fakes: throughput, latency, CPU per message (``rig``: the
load driver they share)."""
