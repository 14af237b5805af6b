"""Local stand-ins for LLM providers: scriptable fake servers and a SIMULATED judge (tests, benchmarks, demos).

Nothing here talks to a real model. Everything binds to 127.0.0.1 only.
"""
